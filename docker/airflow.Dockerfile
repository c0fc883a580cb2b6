# syntax=docker/dockerfile:1
#
# Airflow with Java, PySpark and Sluice: runs the pipeline DAGs and submits their Spark landing
# jobs. docker-compose.yaml also runs the Spark master and worker from this image
# (/opt/sluice/bin/spark-node.sh), so the driver and the executors share one Python, one pyspark
# and one spark_jobs: the executors run the job's Python (pyarrow, NumPy) too.
#
# Build from the repository root (docker/airflow.Dockerfile.dockerignore keeps .venv, data and
# .git out of the build context):
#
#     docker build -f docker/airflow.Dockerfile -t sluice-airflow:0.1.0 .
#
# The base image is Debian bookworm, whose openjdk-17-jdk-headless Spark 4 runs on: a JDK, not
# only a JRE, because the landing compiles its JVM line reader (spark_jobs/jvm) with javac on
# first use (with a JRE only it reads segments in Python workers, slower). On a base without
# Java 17 pass --build-arg JAVA_PACKAGE=openjdk-21-jdk-headless (Spark 4 supports both).
FROM apache/airflow:3.3.2-python3.11

ARG JAVA_PACKAGE=openjdk-17-jdk-headless

USER 0
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
# The JDK's post-install script needs the man folder that slim Debian images leave out. JAVA_HOME
# is a link to wherever the JDK landed, whatever the architecture (amd64, arm64).
# hadolint ignore=DL3008
RUN mkdir -p /usr/share/man/man1 \
    && apt-get update \
    && apt-get install -y --no-install-recommends "${JAVA_PACKAGE}" procps \
    && apt-get autoremove -yqq --purge \
    && apt-get clean \
    && rm -rf /var/lib/apt/lists/* \
    && ln -s "$(dirname "$(dirname "$(readlink -f "$(command -v java)")")")" /usr/lib/jvm/sluice-java \
    && mkdir -p /etc/sluice/pipelines /data \
    && chown airflow:0 /etc/sluice/pipelines /data
ENV JAVA_HOME=/usr/lib/jvm/sluice-java

USER 50000
WORKDIR /opt/sluice
# Sluice's runtime requirements at the versions of requirements.lock (what the test suite ran
# with), Airflow pinned alongside so nothing moves it. The Spark provider also pulls
# pyspark-client, which the lock leaves out: it installs into pyspark's own folder, so it is
# pinned to pyspark's version and the full pyspark wheel is put back over it.
COPY --chown=airflow:0 requirements.txt requirements.lock ./
RUN PYSPARK_VERSION="$(sed -n 's/^pyspark==//p' requirements.lock)" \
    && printf 'pyspark-client==%s\n' "${PYSPARK_VERSION}" >/tmp/pyspark-client.txt \
    && pip install --no-cache-dir "apache-airflow==${AIRFLOW_VERSION}" \
        -r requirements.txt -c requirements.lock -c /tmp/pyspark-client.txt \
    && pip install --no-cache-dir --no-deps --force-reinstall "pyspark==${PYSPARK_VERSION}" \
    && rm /tmp/pyspark-client.txt \
    && python -c "import pyspark, airflow; print('pyspark', pyspark.__version__, 'airflow', airflow.__version__)"

# Sluice itself, an Airflow provider (pipeline_core, spark_jobs and sluice_airflow; not
# editable): Airflow finds its hooks, operators, plugin and config section through the
# package's entry points, so nothing goes into the plugins folder. Then the DAG files.
COPY --chown=airflow:0 pyproject.toml README.md ./
COPY --chown=airflow:0 pipeline_core ./pipeline_core
COPY --chown=airflow:0 spark_jobs ./spark_jobs
COPY --chown=airflow:0 plugins ./plugins
RUN pip install --no-cache-dir --no-deps . \
    && rm -rf build ./*.egg-info \
    && sluice --help >/dev/null \
    && python -c "from sluice_airflow.get_provider_info import get_provider_info as info; print(info()['name'], info()['versions'])"
COPY --chown=airflow:0 dags /opt/airflow/dags
COPY --chown=airflow:0 --chmod=0755 docker/spark-node.sh /opt/sluice/bin/spark-node.sh

# One DAG per pipeline file mounted here. Spark runs in the task's process (local[*]) until
# the spark_default connection names a cluster (docker-compose.yaml: the standalone master).
ENV SLUICE_PIPELINES_DIR=/etc/sluice/pipelines \
    AIRFLOW_CONN_SPARK_DEFAULT='{"conn_type": "spark", "host": "local[*]"}'
WORKDIR /opt/airflow
