"""The ``sources`` section: which files a pipeline reads, how they are framed and parsed."""

from __future__ import annotations

from typing import Annotated
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import Field, field_validator, model_validator

from pipeline_core._compat import StrEnum
from pipeline_core.config._base import NAME_PATTERN, _Strict
from pipeline_core.config._multiline import MultilineConfig
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

    @field_validator("columns")
    @classmethod
    def _declarable_columns(cls, columns: dict[str, ColumnType]) -> dict[str, ColumnType]:
        for name, kind in columns.items():
            if not kind.declarable:
                raise ValueError(
                    f"column {name}: {kind.value} is a format's own type, not one a source declares"
                )
        return columns

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
