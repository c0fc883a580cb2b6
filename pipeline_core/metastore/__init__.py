"""The SQL metastore: offsets, checkpoints, batches, leases, sink state (SQLAlchemy + Alembic).

SQLite (a file under the data directory) is the embedded default; PostgreSQL serves
deployments. Opening a :class:`Metastore` migrates its schema to the newest revision.
"""

from pipeline_core.metastore._migrations import alembic_config, upgrade_to_head
from pipeline_core.metastore._records import (
    AckerTreeRecord,
    BatchRecord,
    ByteRange,
    CheckpointRecord,
    CheckpointState,
    FileRecord,
    FileState,
    SinkStateRecord,
)
from pipeline_core.metastore._store import Metastore, utcnow

__all__ = [
    "AckerTreeRecord",
    "BatchRecord",
    "ByteRange",
    "CheckpointRecord",
    "CheckpointState",
    "FileRecord",
    "FileState",
    "Metastore",
    "SinkStateRecord",
    "alembic_config",
    "upgrade_to_head",
    "utcnow",
]
