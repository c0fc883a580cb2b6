#!/usr/bin/env bash
# A Spark standalone master or worker in the foreground, as a container's main process, from the
# pyspark installed in the image (the same Spark, Python and spark_jobs as the Airflow tasks
# that submit the landing job, so the executors can run its Python).
#
# Usage: spark-node.sh master
#        spark-node.sh worker spark://MASTER:7077
#
# Environment: SPARK_MASTER_PORT (7077), SPARK_MASTER_WEBUI_PORT (8080),
# SPARK_WORKER_WEBUI_PORT (8081), SPARK_WORKER_CORES (all), SPARK_WORKER_MEMORY (1g),
# SPARK_NODE_HOST (the container's hostname: the name other containers reach it by).
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
*)
    sed -n '6,7s/^# \{0,1\}//p' "${BASH_SOURCE[0]}" >&2
    exit 2
    ;;
esac
