"""The columns a source declares beyond its format's own: one rule for the config, the
manifest and the lake table alike."""

from __future__ import annotations

from collections.abc import Mapping

from pipeline_core.formats._format_spec import ColumnType, SourceFormat
from pipeline_core.formats._json_columns import json_declared_columns
from pipeline_core.formats._nginx_format import nginx_log_format
from pipeline_core.formats._user_pattern import user_pattern


def declared_columns(
    fmt: str,
    columns: Mapping[str, ColumnType],
    pattern: str | None = None,
    time_column: str | None = None,
    log_format: str | None = None,
) -> tuple[tuple[str, ColumnType], ...]:
    """The columns a source of format ``fmt`` adds to its table: ``regex``, its pattern's
    groups typed by ``columns``; ``nginx``, a column per variable of its ``log_format``;
    ``json_lines`` and ``logfmt``, a column per declared key and ``rescued``; other formats, none.

    Raises:
        UserPatternError, NginxFormatError, JsonColumnsError: the declaration cannot be
            landed.
    """
    if fmt == SourceFormat.NGINX.value:
        if log_format is None:
            raise ValueError("format nginx needs a log_format")
        layout = nginx_log_format(log_format)
        return user_pattern(layout.pattern, layout.columns, layout.time_column).columns
    if fmt == SourceFormat.REGEX.value:
        if pattern is None:
            raise ValueError("format regex needs a pattern")
        return user_pattern(pattern, columns, time_column).columns
    if fmt in (SourceFormat.JSON_LINES.value, SourceFormat.LOGFMT.value):
        return json_declared_columns(columns)
    return ()
