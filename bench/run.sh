#!/usr/bin/env bash
# `make bench`: the benchmark suite (bench/README.md), one table at the end; not part of
# `make test`. Arguments, or BENCH_ARGS through make, go to the suite:
#   BENCH_ARGS="--quick" make bench        bash bench/run.sh --only 1 3 --runs 5
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck disable=SC2086  # BENCH_ARGS is a list of words
exec .venv/bin/python -m bench.suite ${BENCH_ARGS:-} "$@"
