# syntax=docker/dockerfile:1
#
# The collector alone: tails log files on a host and seals batches into the staging: a local
# spool uploaded to an object store (`handoff.staging: s3://...`), or a shared folder. No
# Airflow, Spark or Java. It serves every pipeline file of /etc/sluice/pipelines
# (reloaded on change and on SIGHUP); SIGTERM (docker stop) seals what it read and releases its
# lease, so give it a stop timeout of several seconds.
#
# Build from the repository root:
#
#     docker build -f docker/collector.Dockerfile -t sluice-collector:0.1.0 .
#
# Run (the pipeline files name the log paths as the container sees them, and collector.host,
# the host's identity in the metastore, which must not change when the container is replaced):
#
#     docker run -d --name sluice-collector --stop-timeout 90 \
#         -v /var/log/nginx:/logs/nginx:ro -v /srv/sluice:/data \
#         -v /etc/sluice/pipelines:/etc/sluice/pipelines:ro \
#         -e SLUICE_METASTORE_URL=postgresql+psycopg://sluice:secret@db/sluice \
#         --env-file /etc/sluice/object-store.env \
#         sluice-collector:0.1.0
#
# (/data holds the spool and state; object-store.env the store's endpoint and credentials,
# AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION, as in
# docker/object-store.env.)
FROM python:3.11.11-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /opt/sluice
# Only the collector's own runtime dependencies, at the versions of requirements.lock.
COPY requirements.lock pyproject.toml README.md ./
# hadolint ignore=DL3013
RUN pip install --no-cache-dir -c requirements.lock \
        sqlalchemy alembic tenacity pydantic pyyaml "psycopg[binary]" pyarrow numpy \
        prometheus-client croniter zlib-ng inotify-simple
COPY pipeline_core ./pipeline_core
RUN pip install --no-cache-dir --no-deps . \
    && rm -rf build ./*.egg-info \
    && sluice --help >/dev/null

# The same user id as the Airflow image's (50000, group 0): with a shared staging folder both
# write it, and the Spark job run from the Airflow image reads and removes what is in it.
RUN useradd --uid 50000 --gid 0 --no-create-home --home-dir /var/lib/sluice sluice \
    && mkdir -p /etc/sluice/pipelines /var/lib/sluice /data \
    && chown sluice:0 /var/lib/sluice /data
USER 50000:0
WORKDIR /var/lib/sluice

ENTRYPOINT ["sluice", "collect", "/etc/sluice/pipelines"]
