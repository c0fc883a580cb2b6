#!/usr/bin/env bash
# A Spark standalone master or worker, or a Spark Connect server, in the foreground, as a
# container's main process, from the pyspark installed in the image (the same Spark, Python and
# spark_jobs as the Airflow tasks that submit the landing job, so the executors can run its
# Python).
#
# Usage: spark-node.sh master
#        spark-node.sh worker spark://MASTER:7077
#        spark-node.sh connect
#
# Environment: SPARK_MASTER_PORT (7077), SPARK_MASTER_WEBUI_PORT (8080),
# SPARK_WORKER_WEBUI_PORT (8081), SPARK_WORKER_CORES (all), SPARK_WORKER_MEMORY (1g),
# SPARK_NODE_HOST (the container's hostname: the name other containers reach it by),
# SPARK_CONNECT_PORT (15002), SPARK_CONNECT_MASTER (local[2]), SPARK_CONNECT_MEMORY (1g).
set -euo pipefail

SPARK_HOME="${SPARK_HOME:-$(python -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))')}"
export SPARK_HOME SPARK_NO_DAEMONIZE=1
host="${SPARK_NODE_HOST:-$(hostname)}"

case "${1:-}" in
master)
    exec "$SPARK_HOME/bin/spark-class" org.apache.spark.deploy.master.Master \
        --host "$host" --port "${SPARK_MASTER_PORT:-7077}" \
        --webui-port "${SPARK_MASTER_WEBUI_PORT:-8080}"
    ;;
worker)
    [[ -n "${2:-}" ]] || {
        echo "usage: spark-node.sh worker spark://MASTER:PORT" >&2
        exit 2
    }
    cores=()
    [[ -z "${SPARK_WORKER_CORES:-}" ]] || cores=(--cores "$SPARK_WORKER_CORES")
    exec "$SPARK_HOME/bin/spark-class" org.apache.spark.deploy.worker.Worker \
        --host "$host" --webui-port "${SPARK_WORKER_WEBUI_PORT:-8081}" "${cores[@]}" \
        --memory "${SPARK_WORKER_MEMORY:-1g}" "$2"
    ;;
connect)
    # A warm Spark for the landing task (a connection of type spark_connect): the lake's SQL
    # settings for every session, no UI; Python workers import the job from each landing's
    # archive. Landings of one job version share a session: keep it through idle days.
    conf=()
    for setting in $(python -c 'from pipeline_core.staging_contract import LAKE_SQL_CONF
print(" ".join(f"{k}={v}" for k, v in LAKE_SQL_CONF.items()))'); do
        conf+=(--conf "$setting")
    done
    exec "$SPARK_HOME/sbin/start-connect-server.sh" --wait \
        --master "${SPARK_CONNECT_MASTER:-local[2]}" \
        --driver-memory "${SPARK_CONNECT_MEMORY:-1g}" "${conf[@]}" \
        --conf spark.ui.enabled=false --conf spark.ui.showConsoleProgress=false \
        --conf "spark.connect.grpc.binding.port=${SPARK_CONNECT_PORT:-15002}" \
        --conf spark.connect.session.manager.defaultSessionTimeout=24h
    ;;
*)
    sed -n '7,9s/^# \{0,1\}//p' "${BASH_SOURCE[0]}" >&2
    exit 2
    ;;
esac
