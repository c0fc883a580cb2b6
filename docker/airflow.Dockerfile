# Airflow image with Java, PySpark and Sluice: runs the pipeline DAGs and their Spark jobs.
# Build from the repository root:  docker build -f docker/airflow.Dockerfile -t sluice-airflow .
FROM apache/airflow:3.3.2-python3.11

USER root
RUN apt-get update \
    && apt-get install -y --no-install-recommends openjdk-17-jre-headless procps \
    && rm -rf /var/lib/apt/lists/*
ENV JAVA_HOME=/usr/lib/jvm/java-17-openjdk-amd64

USER airflow
COPY --chown=airflow:root requirements.txt /opt/sluice/requirements.txt
RUN pip install --no-cache-dir "apache-airflow==3.3.2" -r /opt/sluice/requirements.txt \
    && pip install --no-cache-dir --force-reinstall --no-deps "pyspark==4.3.0"
COPY --chown=airflow:root pyproject.toml /opt/sluice/
COPY --chown=airflow:root pipeline_core /opt/sluice/pipeline_core
COPY --chown=airflow:root spark_jobs /opt/sluice/spark_jobs
COPY --chown=airflow:root dags /opt/airflow/dags
COPY --chown=airflow:root plugins /opt/airflow/plugins
RUN pip install --no-cache-dir --no-deps -e /opt/sluice

ENV SLUICE_PIPELINES_DIR=/opt/sluice/pipelines \
    AIRFLOW_CONN_SPARK_DEFAULT='{"conn_type": "spark", "host": "local[*]"}'
