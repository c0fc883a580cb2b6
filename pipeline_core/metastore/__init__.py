"""The SQL metastore: offsets, checkpoints, batches, leases, sink state (SQLAlchemy + Alembic).

SQLite (a file under the data directory) is the embedded default; PostgreSQL serves
deployments. Opening a :class:`Metastore` migrates its schema to the newest revision. A lease
names its holder as a :class:`LeaseHolder`, which the holder's machine can prove dead.
"""

from pipeline_core.metastore._lease_holder import HolderLiveness, LeaseHolder, ProcessIdentity
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
from pipeline_core.metastore._request_probe import (
    REQUESTS_CHANNEL,
    DataVersionRequestProbe,
    ListeningRequestProbe,
    PollingRequestProbe,
    RequestProbe,
    open_request_probe,
)
from pipeline_core.metastore._store import Metastore, utcnow

__all__ = [
    "REQUESTS_CHANNEL",
    "AckerTreeRecord",
    "BatchRecord",
    "ByteRange",
    "CheckpointRecord",
    "CheckpointState",
    "DataVersionRequestProbe",
    "FileRecord",
    "FileState",
    "HolderLiveness",
    "LeaseHolder",
    "ListeningRequestProbe",
    "Metastore",
    "PollingRequestProbe",
    "ProcessIdentity",
    "RequestProbe",
    "SinkStateRecord",
    "alembic_config",
    "open_request_probe",
    "upgrade_to_head",
    "utcnow",
]
