#!/usr/bin/env bash
# `make bench`: every benchmark, one after the other (not part of `make test`).
set -euo pipefail
cd "$(dirname "$0")/.."
for bench in bench/bench_*.py; do
    echo "== $bench"
    .venv/bin/python "$bench"
done
