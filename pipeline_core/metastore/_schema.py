"""The metastore's tables (SQLAlchemy Core). Alembic migrations create and evolve them."""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Column,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
)

metadata = MetaData()

# A file a collector host tracks for a pipeline, with the offset covered by sealed batches.
files = Table(
    "sluice_files",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("pipeline", String(64), nullable=False),
    Column("host", String(255), nullable=False),
    Column("source", String(64), nullable=False),
    Column("fingerprint", String(32), nullable=False),
    Column("path", Text, nullable=False),
    Column("dev", BigInteger, nullable=False),
    Column("ino", BigInteger, nullable=False),
    Column("sig_size", Integer, nullable=False),
    Column("sig_crc", BigInteger, nullable=False),
    Column("sealed_offset", BigInteger, nullable=False),
    Column("state", String(16), nullable=False),
    Column("tail_digest", Text, nullable=True),
    Column("first_seen_at", DateTime(timezone=True), nullable=False),
    Column("updated_at", DateTime(timezone=True), nullable=False),
    UniqueConstraint("pipeline", "host", "fingerprint", name="uq_sluice_files_identity"),
)

# One row per checkpoint of a pipeline: requested (by a DAG run or the CLI), sealed, committed.
checkpoints = Table(
    "sluice_checkpoints",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("pipeline", String(64), nullable=False),
    Column("state", String(16), nullable=False),
    Column("run_id", String(250), nullable=True),
    Column("data_interval_start", DateTime(timezone=True), nullable=True),
    Column("data_interval_end", DateTime(timezone=True), nullable=True),
    Column("requested_at", DateTime(timezone=True), nullable=False),
    Column("sealed_at", DateTime(timezone=True), nullable=True),
    Column("committed_at", DateTime(timezone=True), nullable=True),
    Column("landing", Text, nullable=True),
    Column("error", Text, nullable=True),
    UniqueConstraint("pipeline", "run_id", name="uq_sluice_checkpoints_run"),
    Index("ix_sluice_checkpoints_pipeline_state", "pipeline", "state"),
)

# One collector host's share of a checkpoint: the sealed staging folder and its counts (its
# parts and segments are listed by the folder's manifest, not here).
batches = Table(
    "sluice_batches",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("checkpoint_id", Integer, ForeignKey("sluice_checkpoints.id"), nullable=False),
    Column("pipeline", String(64), nullable=False),
    Column("host", String(255), nullable=False),
    Column("staging_path", Text, nullable=False),
    Column("line_count", BigInteger, nullable=False),
    Column("byte_count", BigInteger, nullable=False),
    Column("part_count", Integer, nullable=False),
    Column("checksum", String(16), nullable=False),
    Column("event_count", BigInteger, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    UniqueConstraint("checkpoint_id", "host", name="uq_sluice_batches_checkpoint_host"),
)

# The byte ranges of source files each batch holds: every byte belongs to exactly one batch.
batch_ranges = Table(
    "sluice_batch_ranges",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("batch_id", Integer, ForeignKey("sluice_batches.id"), nullable=False),
    Column("fingerprint", String(32), nullable=False),
    Column("start_offset", BigInteger, nullable=False),
    Column("end_offset", BigInteger, nullable=False),
    Column("line_count", BigInteger, nullable=False),
    Index("ix_sluice_batch_ranges_fingerprint", "fingerprint", "start_offset"),
)

# Which collector process may read a pipeline's files on a host, until when.
leases = Table(
    "sluice_leases",
    metadata,
    Column("pipeline", String(64), primary_key=True),
    Column("host", String(255), primary_key=True),
    Column("holder", String(255), nullable=False),
    Column("acquired_at", DateTime(timezone=True), nullable=False),
    Column("expires_at", DateTime(timezone=True), nullable=False),
)

# Penalty/backoff state of each sink of a sink group, so a restarted collector does not hammer
# a sink it knew to be down. Times are epoch seconds (they are compared with the wall clock).
sink_states = Table(
    "sluice_sink_states",
    metadata,
    Column("pipeline", String(64), primary_key=True),
    Column("host", String(255), primary_key=True),
    Column("sink_group", String(64), primary_key=True),
    Column("sink", String(64), primary_key=True),
    Column("consecutive_failures", Integer, nullable=False),
    Column("excluded_until", Float, nullable=False),
    Column("last_failure_at", Float, nullable=False),
    Column("last_error", Text, nullable=True),
    Column("updated_at", DateTime(timezone=True), nullable=False),
)

# The acker's in-flight trees of a pipeline on a host, replaced as a whole at each checkpoint
# and time slice: what a restarted collector must still deliver to its other sinks.
acker_trees = Table(
    "sluice_acker_trees",
    metadata,
    Column("pipeline", String(64), primary_key=True),
    Column("host", String(255), primary_key=True),
    Column("tree_id", String(16), primary_key=True),
    Column("value", String(16), nullable=False),
    Column("source", String(64), nullable=False),
    Column("fingerprint", String(32), nullable=False),
    Column("start_offset", BigInteger, nullable=False),
    Column("end_offset", BigInteger, nullable=False),
    Column("line_count", BigInteger, nullable=False),
    Column("saved_at", DateTime(timezone=True), nullable=False),
)

# The hosts a checkpoint waits for: those whose collector held the pipeline's lease when it was
# requested. None at all: the first host to seal completes it (one host, or one-shot runs).
checkpoint_hosts = Table(
    "sluice_checkpoint_hosts",
    metadata,
    Column("checkpoint_id", Integer, ForeignKey("sluice_checkpoints.id"), primary_key=True),
    Column("host", String(255), primary_key=True),
    Column("sealed", Integer, nullable=False),
)

# What a collector read of a pipeline on a host, sampled every ``collector.progress_sample_s``
# and at each seal: bytes and lines read since the collector's previous sample (``elapsed_s``
# before), and the bytes of its files not read yet. Kept READ_PROGRESS_RETENTION (7 days).
read_progress = Table(
    "sluice_read_progress",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("pipeline", String(64), nullable=False),
    Column("host", String(255), nullable=False),
    Column("sampled_at", DateTime(timezone=True), nullable=False),
    Column("elapsed_s", Float, nullable=False),
    Column("bytes_read", BigInteger, nullable=False),
    Column("lines_read", BigInteger, nullable=False),
    Column("unread_bytes", BigInteger, nullable=False),
    Index("ix_sluice_read_progress_sampled", "pipeline", "sampled_at"),
)

# The lake's Iceberg catalog (pipeline_core.lake): the tables of Iceberg's JDBC catalog, which
# pyiceberg's SQL catalog reads and commits through. Table -> its current metadata file.
iceberg_tables = Table(
    "iceberg_tables",
    metadata,
    Column("catalog_name", String(255), primary_key=True),
    Column("table_namespace", String(255), primary_key=True),
    Column("table_name", String(255), primary_key=True),
    Column("metadata_location", String(1000), nullable=True),
    Column("previous_metadata_location", String(1000), nullable=True),
    Column("iceberg_type", String(5), nullable=True),
)

iceberg_namespace_properties = Table(
    "iceberg_namespace_properties",
    metadata,
    Column("catalog_name", String(255), primary_key=True),
    Column("namespace", String(255), primary_key=True),
    Column("property_key", String(255), primary_key=True),
    Column("property_value", String(1000), nullable=False),
)
