# Environment for running Airflow on Sluice's DAGs and plugins from a checkout.
#
# Source it (POSIX sh, bash, dash, zsh):
#
#     . scripts/airflow-env.sh                  # from the repository root
#     SLUICE_ROOT=/path/to/repo . /path/to/repo/scripts/airflow-env.sh
#
# SLUICE_ROOT defaults to the parent of this script's folder when the shell can tell where the
# script is (bash), otherwise to the current directory when it holds scripts/airflow-env.sh.
# Variables marked "unless set" keep a value already in the environment; the others are what
# makes this checkout the Airflow project and are always set.

if [ -z "${SLUICE_ROOT:-}" ]; then
    _sluice_script="${BASH_SOURCE:-}"
    if [ -z "$_sluice_script" ]; then
        case "$0" in
            *airflow-env.sh) _sluice_script="$0" ;;
        esac
    fi
    if [ -n "$_sluice_script" ]; then
        SLUICE_ROOT="$(cd "$(dirname "$_sluice_script")/.." && pwd)"
    elif [ -f "./scripts/airflow-env.sh" ]; then
        SLUICE_ROOT="$(pwd)"
    else
        echo "airflow-env.sh: set SLUICE_ROOT to the repository root" >&2
        return 1 2>/dev/null || exit 1
    fi
    unset _sluice_script
fi
export SLUICE_ROOT

# Airflow home: metadata DB (SQLite), logs, airflow.cfg (unless set).
export AIRFLOW_HOME="${AIRFLOW_HOME:-$SLUICE_ROOT/data/airflow}"

# The project's DAGs. Sluice's operators, plugin and config section come from the installed
# distribution (an Airflow provider, installed editable into .venv), as in any deployment; the
# plugins folder is the home's own, so the plugin is never loaded twice.
export AIRFLOW__CORE__DAGS_FOLDER="$SLUICE_ROOT/dags"
export AIRFLOW__CORE__PLUGINS_FOLDER="$AIRFLOW_HOME/plugins"
# Sensors wait in the triggerer (Airflow's own default for deferrable operators) (unless set).
export AIRFLOW__OPERATORS__DEFAULT_DEFERRABLE="${AIRFLOW__OPERATORS__DEFAULT_DEFERRABLE:-True}"
export AIRFLOW__CORE__LOAD_EXAMPLES=False

# A quiet local set-up on SQLite: local executor, never the unit-test configuration, and new
# pipeline DAGs start unpaused so scheduled runs and `airflow backfill create` work at once
# (unless set).
export AIRFLOW__CORE__EXECUTOR="${AIRFLOW__CORE__EXECUTOR:-LocalExecutor}"
export AIRFLOW__CORE__UNIT_TEST_MODE=False
export AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION="${AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION:-False}"

# Spark connection: the JSON form (an unencoded URI falls back to YARN) (unless set).
if [ -z "${AIRFLOW_CONN_SPARK_DEFAULT:-}" ]; then
    AIRFLOW_CONN_SPARK_DEFAULT='{"conn_type": "spark", "host": "local[*]"}'
fi
export AIRFLOW_CONN_SPARK_DEFAULT

# One DAG per pipeline config file in this folder (unless set).
export SLUICE_PIPELINES_DIR="${SLUICE_PIPELINES_DIR:-$SLUICE_ROOT/pipelines}"

# The virtualenv's tools first (airflow, spark-submit), its Python for Spark's workers, and the
# repository on the import path of Airflow's processes (the checkout's own modules first).
case ":$PATH:" in
    ":$SLUICE_ROOT/.venv/bin:"*) ;;
    *) export PATH="$SLUICE_ROOT/.venv/bin:$PATH" ;;
esac
export PYSPARK_PYTHON="$SLUICE_ROOT/.venv/bin/python"
case ":${PYTHONPATH:-}:" in
    *":$SLUICE_ROOT:"*) ;;
    *) export PYTHONPATH="$SLUICE_ROOT${PYTHONPATH:+:$PYTHONPATH}" ;;
esac
