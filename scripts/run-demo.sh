#!/usr/bin/env bash
# `make run`: sample nginx logs -> the web_access pipeline DAG (collect, seal, Spark, commit)
# through `airflow dags test`, then what landed. A second run picks up only the new lines.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/airflow-env.sh
CONFIG=pipelines/web_access.yaml
mkdir -p data "$AIRFLOW_HOME"

echo "== 1. sample traffic"
sluice sample-logs data/logs/nginx --lines "${SLUICE_DEMO_LINES:-20000}" --malformed 25

echo "== 2. airflow metadata database"
airflow db migrate >"$AIRFLOW_HOME/db-migrate.log" 2>&1 || { cat "$AIRFLOW_HOME/db-migrate.log"; exit 1; }

echo "== 3. DAG run: request checkpoint -> collect & seal -> Spark landing job -> commit"
started=$(date +%s)
airflow dags test sluice_web_access >"$AIRFLOW_HOME/dags-test.log" 2>&1 \
    || { tail -n 80 "$AIRFLOW_HOME/dags-test.log"; echo "the DAG run failed; full log: $AIRFLOW_HOME/dags-test.log" >&2; exit 1; }
grep -E "Marking run .* (successful|failed)|DagRun Finished|state=(success|failed)" "$AIRFLOW_HOME/dags-test.log" | tail -n 1 || true
echo "DAG run took $(( $(date +%s) - started )) s (log: $AIRFLOW_HOME/dags-test.log)"

echo "== 4. what landed"
sluice report "$CONFIG"
