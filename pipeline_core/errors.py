"""The error taxonomy shared by every Sluice component.

Each exception type has one meaning; causes are chained (``raise ... from exc``) so the original
failure stays visible. The CLI turns any :class:`SluiceError` into a one-line message and a
non-zero exit status.
"""

from __future__ import annotations


class SluiceError(Exception):
    """Base class of every error Sluice raises on purpose."""


class ConfigError(SluiceError):
    """A pipeline config is missing, unreadable or invalid.

    The message names the file, the key (a dotted path such as ``sources.0.format``) and what
    was expected; one problem fits on one line.
    """

    def __init__(self, path: str, problems: list[str]) -> None:
        self.path = path
        self.problems = problems
        if len(problems) == 1 and "\n" not in problems[0]:
            super().__init__(f"invalid pipeline config {path}: {problems[0]}")  # one line
        else:
            super().__init__(f"invalid pipeline config {path}:\n  " + "\n  ".join(problems))


class MetastoreError(SluiceError):
    """The metastore could not be reached, migrated or updated."""


class MetastoreNotReadyError(MetastoreError):
    """The metastore database does not exist yet, or its schema is not at the newest
    migration, where it was to be read without being created or migrated
    (``Metastore.open(url, migrate=False)``); ``sluice db upgrade`` creates and migrates it."""


class CheckpointError(SluiceError):
    """A checkpoint is unknown, or not in the state an operation needs."""


class CollectorBusyError(SluiceError):
    """Another live collector holds this pipeline's lease on this host."""


class ListenAddressError(SluiceError, ValueError):
    """An address to listen on is not ``HOST:PORT`` (``0.0.0.0:9464``, ``127.0.0.1:0``,
    ``[::1]:9464``); the one-line message quotes the value and says what is wrong."""


class SealError(SluiceError):
    """A checkpoint could not be sealed (staging files not written or not recorded)."""


class StagingFullError(SealError):
    """The staging folder's filesystem had no room for a batch's manifest or folder (``ENOSPC``,
    ``EDQUOT``): the batch's parts are kept, and the seal is tried again."""


class CorruptBatchError(SealError):
    """A batch sealed on local disk no longer matches its manifest (a part missing, of
    another size or CRC-32): it cannot be uploaded, and its lines must be read again."""


class LandingError(SluiceError):
    """A checkpoint could not be landed, or its landing does not add up: nothing of it may be
    committed.

    The Spark landing job raises it (its subclasses, in ``spark_jobs`` and
    ``pipeline_core.staging_contract``, say what was wrong), and so do the operations that submit
    the job and read its summary. The module imports nothing: the landing job ships it.
    """


class LakeError(SluiceError):
    """The lake's catalog or tables could not be read or changed (the catalog database is
    unreachable, a commit kept conflicting, a table is not what Sluice declared)."""


class SchemaEvolutionError(LakeError):
    """A source's declared columns would change a lake table's column in a way Iceberg
    cannot (a type narrowed, or made another type): refused before anything is written."""


class EventDeliveryException(SluiceError):
    """A sink, or every sink of a sink group, failed to deliver a batch (Flume's name).

    Retryable failures inside a sink are retried there first; this is what is left after the
    retries. The cause is chained.
    """


class SinkRejectedError(SluiceError):
    """A destination refused a batch for good (for example HTTP 400): retrying cannot help.

    Sinks that have a dead-letter file write the refused lines there with this error's message.
    """


class LocationError(SluiceError, ValueError):
    """A storage location (``handoff.staging``, ``lake.path``) is not one Sluice can use: an
    unsupported URL scheme, no bucket, or a credential written into the URL. The one-line
    message says what is wrong, never a credential's value."""


class StorageError(SluiceError):
    """A storage location (a local folder or an object store) could not be reached, read or
    written; the cause is chained."""
