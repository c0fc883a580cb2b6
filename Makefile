# Sluice: `make run` and `make test` are the two commands. Both set everything up first.
SHELL := /bin/bash
.DEFAULT_GOAL := help
STAMP := .venv/.installed

.PHONY: help setup run page test lint bench lock wheel clean

help:
	@echo "make run    set up, write sample logs, run the web_access DAG, print what landed"
	@echo "make page   a screenshot of the Sluice state page of what make run landed"
	@echo "make test   set up, lint, type-check, run the suite on SQLite and on PostgreSQL"
	@echo "make bench  benchmarks (not part of make test)"
	@echo "make wheel  build the installable provider package into dist/"

setup: $(STAMP)

$(STAMP): requirements.lock pyproject.toml setup.py pipeline_core/source/_framing.c pipeline_core/staging_contract/_int_lists.c scripts/bootstrap.sh
	bash scripts/bootstrap.sh
	touch $@

run: setup
	bash scripts/run-demo.sh

page: setup
	bash scripts/browser.sh install
	. scripts/airflow-env.sh && python scripts/state_page.py

test: setup
	bash scripts/test.sh

lint: setup
	.venv/bin/ruff check . && .venv/bin/ruff format --check . && .venv/bin/mypy

bench: setup
	bash bench/run.sh

lock: setup
	.venv/bin/uv pip compile requirements-dev.txt --python-version 3.11 --no-header \
		--no-emit-package pyspark-client -o requirements.lock

wheel: setup
	.venv/bin/uv build --wheel --out-dir dist .
	rm -rf build

clean:
	rm -rf data .venv .venv-* dist build
