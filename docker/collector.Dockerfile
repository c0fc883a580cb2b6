# Collector-only image: tails log files on a host and seals batches into shared staging.
# Build from the repository root:  docker build -f docker/collector.Dockerfile -t sluice-collector .
# Run:  docker run -v /var/log/nginx:/logs:ro -v /srv/sluice:/data \
#           -v $PWD/pipelines:/pipelines sluice-collector collect /pipelines/web_access.yaml
FROM python:3.11-slim

WORKDIR /opt/sluice
COPY requirements.lock pyproject.toml ./
# The collector needs no Airflow, Spark or Java: only its own runtime dependencies.
RUN pip install --no-cache-dir "sqlalchemy==2.1.9" "alembic==1.20.1" "tenacity==9.2.1" \
        "pydantic==2.14.3" "pyyaml==6.0.3" "psycopg[binary]==3.3.9" "pyarrow==26.0.1" \
        "numpy==2.4.6"
COPY pipeline_core ./pipeline_core
COPY spark_jobs ./spark_jobs
RUN pip install --no-cache-dir --no-deps .

USER 65534:65534
ENTRYPOINT ["sluice"]
CMD ["--help"]
