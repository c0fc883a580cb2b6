"""The SQL metastore: offsets, checkpoints, batches, leases, sink state, read progress
(SQLAlchemy + Alembic).

SQLite (a file under the data directory) is the embedded default; PostgreSQL serves
deployments. Only this package touches the tables::

    Metastore (facade: one transaction per call; opening it migrates the schema)
      ├─► CheckpointTransitions (its ``transitions``: request, seal, excuse, commit, fail, forget)
      └─► Repositories on one connection: CheckpointRepository, BatchRepository,
          FileRepository, LeaseRepository, AckerTreeRepository, SinkStateRepository,
          ReadProgressRepository
    MetastoreView (open_view: read-only, never creates or migrates; view_of: an open
      Metastore read the same way, in one transaction) ──► the same repositories

A checkpoint's lifecycle is :class:`CheckpointState` with its legal moves
(:data:`TRANSITIONS`): every state change is checked there, and whether a checkpoint can be
landed is decided there. A lease names its holder as a :class:`LeaseHolder`, which the
holder's machine can prove dead. Behind a transaction-mode pooler (:class:`MetastorePooling`)
nothing outlives a transaction: no statement is prepared on the server and collectors query
for requests (:class:`QueryingRequestProbe`) instead of ``LISTEN``.
"""

from pipeline_core._metastore_pooling import METASTORE_POOLING_ENV, MetastorePooling
from pipeline_core.metastore._acker_trees import AckerTreeRepository
from pipeline_core.metastore._batches import BatchRepository
from pipeline_core.metastore._checkpoint_transitions import CheckpointTransitions
from pipeline_core.metastore._checkpoints import REQUESTS_CHANNEL, CheckpointRepository
from pipeline_core.metastore._files import FileRepository
from pipeline_core.metastore._lease_holder import HolderLiveness, LeaseHolder, ProcessIdentity
from pipeline_core.metastore._leases import LeaseRepository
from pipeline_core.metastore._lifecycle import (
    TRANSITIONS,
    CheckpointFailedError,
    CheckpointState,
    IllegalTransitionError,
)
from pipeline_core.metastore._migrations import (
    SchemaVersion,
    alembic_config,
    head_revision,
    schema_version,
    upgrade_to_head,
)
from pipeline_core.metastore._read_progress import (
    READ_PROGRESS_RETENTION,
    ReadProgressRepository,
)
from pipeline_core.metastore._records import (
    AckerTreeRecord,
    AckerTreeTotals,
    BatchRecord,
    ByteRange,
    CheckpointRecord,
    LandingCounts,
    LeaseRecord,
    ReadProgressRecord,
    SinkStateRecord,
)
from pipeline_core.metastore._repositories import Repositories
from pipeline_core.metastore._request_probe import (
    DataVersionRequestProbe,
    ListeningRequestProbe,
    PollingRequestProbe,
    QueryingRequestProbe,
    RequestProbe,
    open_request_probe,
)
from pipeline_core.metastore._sink_states import SinkStateRepository
from pipeline_core.metastore._store import Metastore
from pipeline_core.metastore._values import as_utc, redacted_url, utcnow
from pipeline_core.metastore._view import MetastoreView, open_view, view_of

__all__ = [
    "METASTORE_POOLING_ENV",
    "READ_PROGRESS_RETENTION",
    "REQUESTS_CHANNEL",
    "TRANSITIONS",
    "AckerTreeRecord",
    "AckerTreeRepository",
    "AckerTreeTotals",
    "BatchRecord",
    "BatchRepository",
    "ByteRange",
    "CheckpointFailedError",
    "CheckpointRecord",
    "CheckpointRepository",
    "CheckpointState",
    "CheckpointTransitions",
    "DataVersionRequestProbe",
    "FileRepository",
    "HolderLiveness",
    "IllegalTransitionError",
    "LandingCounts",
    "LeaseHolder",
    "LeaseRecord",
    "LeaseRepository",
    "ListeningRequestProbe",
    "Metastore",
    "MetastorePooling",
    "MetastoreView",
    "PollingRequestProbe",
    "ProcessIdentity",
    "QueryingRequestProbe",
    "ReadProgressRecord",
    "ReadProgressRepository",
    "Repositories",
    "RequestProbe",
    "SchemaVersion",
    "SinkStateRecord",
    "SinkStateRepository",
    "alembic_config",
    "as_utc",
    "head_revision",
    "open_request_probe",
    "open_view",
    "redacted_url",
    "schema_version",
    "upgrade_to_head",
    "utcnow",
    "view_of",
]
