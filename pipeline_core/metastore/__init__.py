"""The SQL metastore: file offsets, checkpoints, batches, leases (SQLAlchemy 2 + Alembic).

SQLite (a file under the data directory) is the embedded default; PostgreSQL serves
deployments. Opening a :class:`Metastore` migrates its schema to the newest revision.
"""

from pipeline_core.metastore._migrations import alembic_config, upgrade_to_head
from pipeline_core.metastore._records import (
    BatchRecord,
    ByteRange,
    CheckpointRecord,
    CheckpointState,
    FileRecord,
    FileState,
)
from pipeline_core.metastore._store import Metastore, utcnow

__all__ = [
    "BatchRecord",
    "ByteRange",
    "CheckpointRecord",
    "CheckpointState",
    "FileRecord",
    "FileState",
    "Metastore",
    "alembic_config",
    "upgrade_to_head",
    "utcnow",
]
