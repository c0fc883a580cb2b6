-- Sluice's metastore lives in a database of its own beside Airflow's (both keep an
-- alembic_version table). Run once, when the PostgreSQL volume is created.
CREATE DATABASE sluice OWNER airflow;
