#!/usr/bin/env bash
# `make run`: sample nginx logs -> the web_access pipeline DAG (collect, seal, Spark, commit)
# through `airflow dags test`, then what landed. A second run picks up only the new lines.
#
# The DAG run lands on a warm Spark: a Spark Connect server (scripts/spark-connect.sh, started
# here unless it runs, left running for the next run; `scripts/spark-connect.sh stop` stops it),
# through a spark_default connection of type spark_connect. SLUICE_DEMO_SPARK=submit lands with
# a spark-submit instead (a JVM of its own for the run), as before.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/airflow-env.sh
CONFIG=pipelines/web_access.yaml
mkdir -p data "$AIRFLOW_HOME"

echo "== 1. sample traffic"
sluice sample-logs data/logs/nginx --lines "${SLUICE_DEMO_LINES:-20000}" --malformed 25

echo "== 2. airflow metadata database"
airflow db migrate >"$AIRFLOW_HOME/db-migrate.log" 2>&1 || { cat "$AIRFLOW_HOME/db-migrate.log"; exit 1; }

case "${SLUICE_DEMO_SPARK:-connect}" in
connect)
    echo "== 3. a warm Spark: the Spark Connect server"
    url="$(bash scripts/spark-connect.sh start)"
    export AIRFLOW_CONN_SPARK_DEFAULT="{\"conn_type\": \"spark_connect\", \"host\": \"$url\"}"
    landing="Spark landing job on $url"
    ;;
submit) landing="Spark landing job (spark-submit)" ;;
*) echo "SLUICE_DEMO_SPARK must be connect or submit, got '$SLUICE_DEMO_SPARK'" >&2; exit 2 ;;
esac

echo "== 4. DAG run: request checkpoint -> collect & seal -> $landing -> commit"
started=$(date +%s)
airflow dags test sluice_web_access >"$AIRFLOW_HOME/dags-test.log" 2>&1 \
    || { tail -n 80 "$AIRFLOW_HOME/dags-test.log"; echo "the DAG run failed; full log: $AIRFLOW_HOME/dags-test.log" >&2; exit 1; }
grep -E "Marking run .* (successful|failed)|DagRun Finished|state=(success|failed)" "$AIRFLOW_HOME/dags-test.log" | tail -n 1 || true
echo "DAG run took $(( $(date +%s) - started )) s (log: $AIRFLOW_HOME/dags-test.log)"

echo "== 5. what landed"
sluice report "$CONFIG"
