"""Typed pipeline configuration. Every model rejects unknown keys."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import Field, PrivateAttr, field_validator, model_validator

from pipeline_core._compat import StrEnum
from pipeline_core.config._base import (
    HOST_PATTERN,
    HOST_RULE,
    NAME_PATTERN,
    _Strict,
    default_host,
)
from pipeline_core.config._multiline import MultilineConfig
from pipeline_core.config._secrets import SecretMask
from pipeline_core.config._sink_groups import HandoffSinkConfig, ProcessorKind, SinkGroupConfig
from pipeline_core.config._sinks import (
    FileSinkConfig,
    HttpSinkConfig,
    NullSinkConfig,
    SqlSinkConfig,
    StdoutSinkConfig,
)
from pipeline_core.config._worker import WorkerConfig
from pipeline_core.formats import (
    ColumnType,
    JsonColumnsError,
    LogFormatError,
    NginxFormatError,
    SourceFormat,
    UserPatternError,
    declared_columns,
    json_columns,
    python_log_layout,
    user_pattern,
)
from pipeline_core.staging_contract import StagingArea
from pipeline_core.storage import StorageLocation

SinkConfig = Annotated[
    HandoffSinkConfig
    | HttpSinkConfig
    | SqlSinkConfig
    | FileSinkConfig
    | NullSinkConfig
    | StdoutSinkConfig,
    Field(discriminator="type"),
]
"""One sink's config; its ``type`` key chooses the model."""

DEFAULT_SINK = "lake"


class StartPosition(StrEnum):
    """Where reading starts in a file first seen by a pipeline."""

    BEGINNING = "beginning"
    END = "end"


_LOCAL_TIME_FORMATS = (
    SourceFormat.PYTHON_LOGGING,
    SourceFormat.SPARK_LOG4J,
    SourceFormat.SYSLOG_RFC3164,
    SourceFormat.REGEX,
)
"""The formats whose lines state a local time without an offset (``timezone`` says whose)."""


class SourceConfig(_Strict):
    """One group of files read alike."""

    name: Annotated[str, Field(pattern=NAME_PATTERN)] = "default"
    paths: Annotated[list[str], Field(min_length=1)]
    """Glob patterns (``**`` allowed); relative ones resolve against the config's folder."""
    exclude: list[str] = []
    """Glob patterns of files never read. A pattern without a ``/`` matches a file's name
    wherever it is, as in ``.gitignore`` (``*.gz``: compressed rotations); one with a ``/``
    matches the whole path, a relative one resolving against the config's folder."""
    format: SourceFormat
    time_field: str | None = None
    """For ``json_lines`` and ``logfmt``: the key holding the event time (default ``time``;
    ``logfmt`` also ``ts``, then ``timestamp``). A line without it takes its batch's seal time;
    one whose value is not a time is a ``bad_timestamp`` reject."""
    start_at: StartPosition = StartPosition.BEGINNING
    optional: bool = False
    """Whether ``paths`` may match no file (logs that appear later): ``sluice validate``
    then passes and ``sluice collect`` does not warn; by default a source with no file fails
    the validation."""
    follow_symlinks: bool = False
    """Whether files reached through a symlink are read. By default a matched path that is a
    symlink, or that lies under a symlinked folder below the glob's fixed prefix (the folders
    written without a pattern: ``/var/log/nginx`` for ``/var/log/nginx/access.log*``), is not
    read: it is logged once and listed by ``sluice validate``. With ``true`` (needed for
    ``/var/log/containers``, whose entries link into ``/var/log/pods``) such a path is read
    when the file it resolves to lies under the glob's fixed prefix or under one of
    ``symlink_targets``. A FIFO, a device or a file other than the one the scan found is never
    opened for reading in any case."""
    symlink_targets: list[str] = []
    """With ``follow_symlinks``: the folders, besides each glob's fixed prefix, that the files
    a symlink leads to may lie in (``["/var/log/pods"]``); relative ones resolve against the
    config's folder. Default: none (only the glob's prefix)."""
    multiline: MultilineConfig | None = None
    """How lines join into events (a traceback, a stack trace): each event lands as one row.
    Default: every line is an event."""
    log_format: str | None = None
    """For ``python_logging``: the ``logging.Formatter`` format string the program logs with,
    ending with ``%(message)s`` (default ``%(levelname)s:%(name)s:%(message)s``). For
    ``nginx`` (required): the ``log_format`` directive as it is in nginx.conf, or its format
    string."""
    timezone: str | None = None
    """For ``python_logging``, ``spark_log4j``, ``syslog_rfc3164`` and ``regex``: the IANA time
    zone (``Europe/Zurich``) of the time their lines state without an offset (``logging``,
    log4j and BSD syslog write the process's local time so). Default ``UTC``."""
    pattern: str | None = None
    """For ``regex`` (required): a regular expression in Python's syntax whose named groups
    ``(?P<column>...)`` are the table's columns, matched from the event's start
    (docs/formats.md)."""
    columns: dict[str, ColumnType] = {}
    """For ``regex``: the type of a group's column (``string``, ``int``, ``long``, ``double``,
    ``boolean``, ``timestamp``); a group not named here is a string. For ``json_lines`` and
    ``logfmt``: the keys landed as typed columns (in ``json_lines`` a dotted path reaches into
    nested objects: ``http.status`` lands in ``http_status``), with a ``rescued`` map of the
    values that were not of their type. A column added later is added to the table (older
    rows read null); a type may change only as Iceberg promotes (``int`` to ``long``)."""
    time_column: str | None = None
    """For ``regex``: the ``timestamp`` column that gives ``event_time`` (default: none, the
    seal time)."""
    time_layout: str | None = None
    """For ``regex``: how ``timestamp`` columns are written, a Spark datetime pattern
    (``yyyy-MM-dd HH:mm:ss,SSS``); default ISO 8601."""

    def declared_columns(self) -> tuple[tuple[str, ColumnType], ...]:
        """The columns the source declares after its format's own (``regex``: its pattern's
        groups, typed), as its lake table has them."""
        return declared_columns(
            self.format.value, self.columns, self.pattern, self.time_column, self.log_format
        )

    @model_validator(mode="after")
    def _format_options(self) -> SourceConfig:
        if self.format is SourceFormat.NGINX:
            if self.log_format is None:
                raise ValueError("format nginx needs a log_format (the directive in nginx.conf)")
            try:
                declared_columns(self.format.value, {}, log_format=self.log_format)
            except (NginxFormatError, UserPatternError) as exc:
                raise ValueError(f"log_format {self.log_format!r}: {exc}") from exc
        elif self.log_format is not None and self.format is not SourceFormat.PYTHON_LOGGING:
            raise ValueError("log_format belongs to formats python_logging and nginx only")
        regex_keys = {
            "pattern": self.pattern,
            "time_column": self.time_column,
            "time_layout": self.time_layout,
        }
        if self.format is SourceFormat.REGEX:
            if self.pattern is None:
                raise ValueError("format regex needs a pattern")
            try:
                user_pattern(self.pattern, self.columns, self.time_column)
            except UserPatternError as exc:
                raise ValueError(f"pattern {self.pattern!r}: {exc}") from exc
        else:
            given = [key for key, value in regex_keys.items() if value is not None]
            if given:
                raise ValueError(f"{', '.join(given)} belong to format regex only")
        if self.format in (SourceFormat.JSON_LINES, SourceFormat.LOGFMT):
            try:
                json_columns(self.columns)
            except JsonColumnsError as exc:
                raise ValueError(f"columns: {exc}") from exc
        elif self.columns and self.format is not SourceFormat.REGEX:
            raise ValueError("columns belong to formats regex, json_lines and logfmt only")
        if self.timezone is not None and self.format not in _LOCAL_TIME_FORMATS:
            named = ", ".join(f.value for f in _LOCAL_TIME_FORMATS)
            raise ValueError(f"timezone belongs to formats {named} only")
        if self.log_format is not None and self.format is SourceFormat.PYTHON_LOGGING:
            try:
                python_log_layout(self.log_format)
            except LogFormatError as exc:
                raise ValueError(f"log_format {self.log_format!r}: {exc}") from exc
        if self.timezone is not None:
            try:
                ZoneInfo(self.timezone)
            except (ZoneInfoNotFoundError, ValueError) as exc:
                raise ValueError(f"timezone {self.timezone!r} is not an IANA time zone") from exc
        return self


def _valid_location(value: str | None) -> str | None:
    """A location key's value, checked (``LocationError`` is a ``ValueError``: pydantic names
    the key)."""
    if value is not None:
        StorageLocation.parse(value)
    return value


def _at_most_one(first: object, second: object, first_key: str, second_key: str) -> None:
    if first is not None and second is not None:
        raise ValueError(f"give {first_key} or {second_key}, not both")


class StagingAccess(StrEnum):
    """Who may read the batches sealed into a local staging folder."""

    OWNER = "owner"
    """The collector's user alone: files 0600 in folders 0700."""
    GROUP = "group"
    """Also the collector's group: files 0640 in folders 2750 (setgid: what is made in them
    keeps their group), for a landing that runs as another user of that group."""


class HandoffConfig(_Strict):
    """The handoff sink: where sealed batches are staged for Spark."""

    retain_hours: Annotated[float, Field(ge=0)] = 24
    """A committed checkpoint's staging batches are deleted once they are this old (by seal
    time); until then the checkpoint can be reprocessed from them."""

    staging: str | None = None
    """Where sealed batches are staged for the landing: a folder (a path, relative to the
    file's folder, or a ``file://`` URL) or an object store prefix (``s3://bucket/prefix``,
    ``gs://bucket/prefix``, ``abfs://container@account.dfs.core.windows.net/prefix``).
    Credentials are never written here: they come from the environment and the store's
    standard chain; an S3-compatible server's endpoint from ``AWS_ENDPOINT_URL_S3`` or
    ``AWS_ENDPOINT_URL``. With an object store the collector seals each batch into
    ``spool_dir`` first, then uploads it. Default: ``staging_dir``."""
    staging_dir: Path | None = None
    """A local staging folder (the older spelling of ``staging`` with a path; give one of
    the two). Default: ``<data_dir>/staging``."""
    spool_dir: Path | None = None
    """With ``staging`` in an object store: where batches are sealed before they are
    uploaded, and kept until the upload is recorded. Default: ``<data_dir>/spool``."""
    max_spool_bytes: Annotated[int, Field(ge=1024 * 1024)] = 4 * 1024 * 1024 * 1024
    """With ``staging`` in an object store: the most bytes the spool holds (the batch being
    written plus sealed batches waiting for their upload). At this bound reading pauses until
    uploads free space; nothing is dropped."""
    upload_retry_s: Annotated[float, Field(gt=0)] = 300.0
    """With ``staging`` in an object store: how long a failing upload is retried (jittered
    exponential waits up to 30 s) before the collector stops with the error; the batch stays
    in the spool and the next start uploads it."""
    upload_read_back: bool = True
    """With ``staging`` in an object store: read every uploaded part back and check its CRC-32
    against the manifest's (twice the traffic). The bytes sent are always checked, and the
    stored object's size; false skips the read-back."""
    max_part_bytes: Annotated[int, Field(gt=0)] = 128 * 1024 * 1024
    """A part file is closed and a new one started past this many line bytes."""
    staging_access: StagingAccess = StagingAccess.OWNER
    """Who may read what is sealed into a local staging folder: ``owner`` (files 0600 in
    folders 0700, whatever the umask) or ``group`` (0640 in 2750: the Spark landing runs as
    another user of the collector's group, on a shared folder). The spool, the metastore and
    everything else under ``data_dir`` stay the owner's alone."""

    _staging_location = field_validator("staging")(_valid_location)

    @model_validator(mode="after")
    def _one_staging(self) -> HandoffConfig:
        _at_most_one(self.staging, self.staging_dir, "handoff.staging", "handoff.staging_dir")
        return self


class LakeConfig(_Strict):
    """The lake: Iceberg tables in a SQL catalog kept in the metastore's database."""

    warehouse: str | None = None
    """The warehouse: table data and metadata live in ``<warehouse>/<namespace>/<table>/``.
    A folder (a path, relative to the file's folder, or a ``file://`` URL) or an object store
    prefix (``s3://bucket/prefix``, ``gs://bucket/prefix``,
    ``abfs://container@account.dfs.core.windows.net/prefix``). Credentials are never written
    here: they come from the environment and the store's standard chain, as for
    ``handoff.staging``. Default: ``path``."""
    path: Path | None = None
    """A local warehouse folder (the older spelling of ``warehouse`` with a path; give one of
    the two). Default: ``<data_dir>/lake``."""
    namespace: Annotated[str, Field(pattern=r"^[a-z][a-z0-9_]{0,62}$")] | None = None
    """The catalog namespace of the pipeline's tables. Default: the pipeline's name."""

    _warehouse_location = field_validator("warehouse")(_valid_location)

    @model_validator(mode="after")
    def _one_warehouse(self) -> LakeConfig:
        _at_most_one(self.warehouse, self.path, "lake.warehouse", "lake.path")
        return self


class MetastoreConfig(_Strict):
    url: str | None = None
    """SQLAlchemy URL. Default: SQLite file ``<data_dir>/sluice.db``. The environment variable
    ``SLUICE_METASTORE_URL`` overrides it."""
    retain_days: Annotated[float, Field(gt=0)] = 30
    """Maintenance forgets a committed checkpoint this many days after its commit (and never
    before its staging is removed, ``handoff.retain_hours``): its rows, its batches' and their
    byte ranges are deleted. Its lake rows stay; it can no longer be reprocessed (its staging
    is gone already), and a DAG run of its interval cleared after that lands a new
    checkpoint."""


class CollectorConfig(_Strict):
    """Tuning of the collector. Defaults follow Logtail's."""

    host: str = Field(default_factory=default_host)
    """The name this collector stages its batches and holds its leases under, a folder of every
    batch it seals: a host name (``HOST_PATTERN``: letters, digits, ``.``, ``-``, ``_``,
    starting with a letter or digit). Default: this machine's name, with any other character
    made ``-``."""
    read_slice_ms: Annotated[int, Field(gt=0)] = 25
    read_chunk_bytes: Annotated[int, Field(ge=4096)] = 1024 * 1024
    max_line_bytes: Annotated[int, Field(ge=1024)] = 1024 * 1024
    """A longer line is skipped to its end without being held and staged as its first KiB
    only: it lands as one ``line_too_long`` reject (docs/architecture.md, "Over-long lines")."""
    signature_bytes: Annotated[int, Field(ge=16, le=65536)] = 1024
    ring_size: Annotated[int, Field(ge=2)] = 16
    """Slots of the ring between the send stage and the sink groups (a power of two). With
    several sink groups a slot keeps its chunk until it is reused (memory: up to
    ``ring_size`` x ``read_chunk_bytes``); with one, it is released once delivered."""
    process_queue_size: Annotated[int, Field(ge=1)] = 8
    """High watermark of the pipeline's process queue, in chunks (low: 2/3 of it)."""
    send_queue_size: Annotated[int, Field(ge=1)] = 8
    """High watermark of the pipeline's send queue, in chunks (low: 2/3 of it)."""
    acker_timeout_s: Annotated[float, Field(gt=0)] = 30.0
    """A chunk not acked by every sink group within this time is replayed to the sinks other
    than the handoff (Storm's ``topology.message.timeout.secs``)."""
    max_pending_trees: Annotated[int, Field(ge=1)] = 128
    """Chunks in flight (read, not yet acked everywhere) before reading waits (Storm's max
    spout pending)."""
    max_send_bytes_per_s: Annotated[int, Field(gt=0)] | None = None
    """Most bytes per second the pipeline sends to its sinks; over it, the pipeline waits
    without holding up the others (null: no limit)."""
    acker_snapshot_s: Annotated[float, Field(gt=0)] = 5.0
    """How often the in-flight chunks are saved to the metastore besides every checkpoint."""
    progress_sample_s: Annotated[float, Field(gt=0)] = 30.0
    """How often the bytes and lines read and the bytes not read yet are sampled into the
    metastore (also when reading starts and at every seal), for the state page's charts; a
    pipeline that read nothing, with as much left to read, is sampled every 5 minutes. Samples
    are kept 7 days."""
    discovery_interval_s: Annotated[float, Field(gt=0)] = 1.0
    """How often the pipeline's paths are globbed for new, renamed and removed files (with
    ``file_events: inotify`` they are also looked for as soon as an event says so)."""
    file_events: Literal["inotify", "poll"] = "inotify"
    """How a caught-up collector learns that files changed. ``inotify``: the kernel's file
    events wake it (Linux; a line is read within milliseconds of its write); where inotify is
    missing or its limits are reached it polls, with one warning. ``poll``: it looks again
    every 0.2 s."""
    file_events_fallback_s: Annotated[float, Field(gt=0)] = 10.0
    """With ``inotify``: how long a caught-up collector waits for an event before looking at
    its files anyway, and how often a pipeline whose folders are all watched globs its paths
    (``discovery_interval_s``, if longer, still applies): what raises no event here is seen
    within this (writes and new files on NFS or from other hosts, a file written after its
    deletion). Each look reads every open file of every pipeline, and a glob costs a system
    call per file: at 1 s, looking at and globbing 100 pipelines of 10 files cost 2.6 % of a
    core doing nothing. Filebeat's scanner looks every 10 s
    (``prospector.scanner.check_interval``)."""
    file_events_coalesce_ms: Annotated[int, Field(ge=0)] = 50
    """With ``inotify``: once an event woke the collector, later events are gathered for this
    long before they wake it again. A line written to a quiet file is read at once; a busy
    file is read every this many milliseconds, in larger chunks, instead of at every write
    (every wake reads a chunk through the stages and its acks come back as mail: 0 ms costs
    more than half a core at 1,000 writes a second; 20 ms 7 % at 10 MB/s, 50 ms 4.4 %, with
    a line's write -> its sinks p99 still far under 100 ms). Process-wide: the first
    pipeline's value."""
    max_open_files: Annotated[int, Field(ge=1)] = 512
    """Most descriptors the pipeline holds on its files. Beyond it the files read to their
    end and idle longest are closed first, and files found with unread bytes wait for a
    descriptor; a closed file is opened again by identity (device, inode, first bytes) and
    read on from its offset (docs/architecture.md, "Idle files"). Files rotated away and
    copytruncate copies are never closed, so may exceed it. Filebeat (``harvester_limit:
    0``) and Vector have no bound, Logstash's file input 4095; 512 is half the soft
    ``RLIMIT_NOFILE`` that systemd gives a service by default (1024), leaving room for the
    collector's other descriptors."""
    close_idle_after_s: Annotated[float, Field(gt=0)] = 300.0
    """A file neither written nor read for this long has its descriptor closed (it is opened
    again when it is written, grows or moves, and read on from its offset). Filebeat's
    ``close_inactive`` (5 minutes); Logstash's ``close_older`` is an hour, Vector keeps every
    file open."""
    forget_done_files_after_h: Annotated[float, Field(gt=0)] = 24.0
    """A file rotated away or deleted, read to its end and sealed, is forgotten this long
    after: no longer tracked, its row deleted from ``sluice_files`` at the next seal. Without
    it a host whose logs rotate to new names (``dateext``) keeps a row for every file it ever
    read. Only within this time is a file that turns up again on the same inode with the same
    first bytes taken for the one read before."""
    lease_seconds: Annotated[float, Field(gt=0)] = 60.0
    rotated_grace_s: Annotated[float, Field(ge=0)] = 5.0
    """While tailing, how long a file renamed away or deleted is still watched for appends
    after its end is reached (``--once`` runs finish it at its end)."""

    @field_validator("ring_size")
    @classmethod
    def _power_of_two(cls, value: int) -> int:
        if value & (value - 1):
            raise ValueError("must be a power of two")
        return value

    @field_validator("host")
    @classmethod
    def _host_name(cls, value: str) -> str:
        if not re.fullmatch(HOST_PATTERN, value):
            raise ValueError(f"not a host name ({HOST_RULE}), and it names a staging folder")
        return value


class PipelineConfig(_Strict):
    """A pipeline: its sources, where batches are staged, the lake, the metastore, the schedule.

    ``config_path`` is the file the config was read from (relative paths resolve against its
    folder); it is set by the loader, not written in the file.
    """

    name: Annotated[str, Field(pattern=NAME_PATTERN)]
    sources: Annotated[list[SourceConfig], Field(min_length=1)]
    data_dir: Path = Path("data")
    handoff: HandoffConfig = HandoffConfig()
    lake: LakeConfig = LakeConfig()
    metastore: MetastoreConfig = MetastoreConfig()
    collector: CollectorConfig = CollectorConfig()
    sinks: dict[str, SinkConfig] = {DEFAULT_SINK: HandoffSinkConfig()}
    """Named sinks; exactly one of type ``handoff`` (the batches the Spark job lands)."""
    sink_groups: list[SinkGroupConfig] | None = None
    """How the sinks are grouped. Omitted: each sink alone in a ``default`` group of its name."""
    priority: int = 0
    """Within each round of a collector serving several pipelines, higher priorities are read
    first; every pipeline is still read every round."""
    schedule: str | None = "*/5 * * * *"
    """Cron expression or Airflow preset of the pipeline's DAG; null for manual runs only."""
    worker: WorkerConfig = WorkerConfig()
    """Where the ``sluice_<name>_worker`` DAG runs its collectors (default: one task on
    Airflow's default queue)."""
    config_path: Path | None = Field(default=None, exclude=True)
    _secret_mask: SecretMask = PrivateAttr(default_factory=SecretMask)

    @field_validator("sources")
    @classmethod
    def _unique_source_names(cls, sources: list[SourceConfig]) -> list[SourceConfig]:
        names = [source.name for source in sources]
        duplicated = sorted({name for name in names if names.count(name) > 1})
        if duplicated:
            raise ValueError(f"source names must be unique, repeated: {', '.join(duplicated)}")
        return sources

    @model_validator(mode="after")
    def _events_fit_a_read(self) -> PipelineConfig:
        chunk = self.collector.read_chunk_bytes
        for number, source in enumerate(self.sources):
            if source.multiline is not None and source.multiline.max_bytes > chunk:
                raise ValueError(
                    f"sources.{number}.multiline.max_bytes ({source.multiline.max_bytes}) is "
                    f"over collector.read_chunk_bytes ({chunk}): an event must fit one read"
                )
        return self

    @model_validator(mode="after")
    def _sinks_and_groups_agree(self) -> PipelineConfig:
        handoffs = [n for n, c in self.sinks.items() if isinstance(c, HandoffSinkConfig)]
        if len(handoffs) != 1:
            raise ValueError(
                "sinks: a pipeline needs exactly one sink of type 'handoff' (the batches the "
                f"Spark job lands), found {len(handoffs)}"
                + (f": {', '.join(handoffs)}" if handoffs else "")
            )
        bad_names = [name for name in self.sinks if not re.match(NAME_PATTERN, name)]
        if bad_names:
            raise ValueError(f"sinks: invalid sink names {bad_names} (pattern {NAME_PATTERN})")
        groups = self.sink_groups_in_force
        group_names = [group.name for group in groups]
        if len(set(group_names)) != len(group_names):
            raise ValueError("sink_groups: group names must be unique")
        seen: dict[str, str] = {}
        for group in groups:
            for sink in group.sinks:
                if sink not in self.sinks:
                    raise ValueError(f"sink group {group.name!r} names an unknown sink {sink!r}")
                if sink in seen:
                    raise ValueError(
                        f"sink {sink!r} is in two sink groups: {seen[sink]!r} and {group.name!r}"
                    )
                seen[sink] = group.name
        unused = sorted(set(self.sinks) - set(seen))
        if unused:
            raise ValueError(f"sinks not in any sink group: {', '.join(unused)}")
        handoff_group = next(g for g in groups if handoffs[0] in g.sinks)
        if handoff_group.processor is not ProcessorKind.DEFAULT:
            raise ValueError(
                f"the handoff sink {handoffs[0]!r} must be alone in a 'default' group (every "
                f"line must reach the lake), not in {handoff_group.processor.value!r} group "
                f"{handoff_group.name!r}"
            )
        return self

    def masked(self, text: str) -> str:
        """``text`` (anything shown about this config: a value, a message) with the values of
        its secret variables (``${DB_PASSWORD}``...) and every URL's password replaced by
        ``***``."""
        return self._secret_mask(text)

    def with_secrets(self, mask: SecretMask) -> PipelineConfig:
        """A copy whose :meth:`masked` hides what ``mask`` hides (set by the loader)."""
        copy = self.model_copy()
        copy._secret_mask = mask
        return copy

    @property
    def sink_groups_in_force(self) -> list[SinkGroupConfig]:
        """``sink_groups``, or one ``default`` group per sink when it is omitted."""
        if self.sink_groups is not None:
            return self.sink_groups
        return [SinkGroupConfig(name=name, sinks=[name]) for name in self.sinks]

    @property
    def staging_location(self) -> StorageLocation:
        """Where sealed batches are staged (``handoff.staging``, ``handoff.staging_dir`` or
        ``<data_dir>/staging``)."""
        if self.handoff.staging is not None:
            return StorageLocation.parse(self.handoff.staging)
        return StorageLocation.parse(self.handoff.staging_dir or self.data_dir / "staging")

    @property
    def staging_area(self) -> StagingArea:
        """Where the pipeline's sealed checkpoints are (``staging_location``, then
        ``<pipeline>/<checkpoint:08d>``)."""
        return StagingArea(self.staging_location, self.name)

    @property
    def staging_dir(self) -> Path:
        """The local staging folder.

        Raises:
            LocationError: staging is in an object store (``staging_location``).
        """
        return self.staging_location.local_path

    @property
    def seal_dir(self) -> Path:
        """Where the collector seals batches: the staging folder, or with staging in an
        object store the spool (``handoff.spool_dir``, default ``<data_dir>/spool``) they
        are uploaded from."""
        location = self.staging_location
        if location.is_local:
            return location.local_path
        return self.handoff.spool_dir or self.data_dir / "spool"

    @property
    def lake_location(self) -> StorageLocation:
        """Where the lake's tables are (``lake.warehouse``, ``lake.path`` or
        ``<data_dir>/lake``)."""
        if self.lake.warehouse is not None:
            return StorageLocation.parse(self.lake.warehouse)
        return StorageLocation.parse(self.lake.path or self.data_dir / "lake")

    @property
    def lake_dir(self) -> Path:
        """The local warehouse folder.

        Raises:
            LocationError: the lake is in an object store (``lake_location``).
        """
        return self.lake_location.local_path

    @property
    def lake_warehouse(self) -> str | Path:
        """The warehouse as the landing job and the catalog take it: the local folder, or
        the object store's URL."""
        location = self.lake_location
        return location.local_path if location.is_local else location.url

    @property
    def lake_namespace(self) -> str:
        return self.lake.namespace or self.name

    @property
    def metastore_url(self) -> str:
        return self.metastore.url or f"sqlite:///{self.data_dir / 'sluice.db'}"

    def source(self, name: str) -> SourceConfig:
        for source in self.sources:
            if source.name == name:
                return source
        raise KeyError(name)
