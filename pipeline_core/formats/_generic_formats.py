"""Formats of any program's output: text as it is, a JSON object or logfmt's ``key=value`` pairs
a line, the source's own pattern, and a program's output as container runtimes write it
(containerd and CRI-O, Docker).
"""

from __future__ import annotations

from pipeline_core.formats._format_spec import (
    CUT_COLUMN,
    EVENT_LINES_COLUMN,
    PATTERN_REJECTS,
    ColumnType,
    FormatColumn,
    FormatSpec,
    RejectReason,
    SourceFormat,
)

_MESSAGE = FormatColumn(
    "message",
    ColumnType.STRING,
    "The event's text (a multiline event's lines joined by ``\\n``), invalid UTF-8 replaced.",
)
"""The ``raw`` format's text."""
_CONTAINER_COLUMNS = (
    FormatColumn(
        "message",
        ColumnType.STRING,
        "The event as the program printed it: its entries' texts joined (a partial entry's "
        "with the next one's, lines with ``\\n``).",
    ),
    FormatColumn("stream", ColumnType.STRING, "``stdout`` or ``stderr``."),
    EVENT_LINES_COLUMN,
    CUT_COLUMN,
)
_CONTAINER_TIME = (
    "The runtime's time of the event's first entry (RFC 3339, UTC), to the microsecond."
)

GENERIC_FORMATS: tuple[FormatSpec, ...] = (
    FormatSpec(
        SourceFormat.JSON_LINES,
        "One JSON object per line (a pretty-printed one with ``multiline``).",
        (
            FormatColumn(
                "payload",
                ColumnType.STRING,
                "The object as written (without a CRLF line end's ``\\r``).",
            ),
        ),
        "The top-level key ``time_field`` (default ``time``): epoch seconds or ISO 8601 "
        "(without an offset: UTC); the seal time when the key is missing or null.",
        (
            RejectReason.INVALID_UTF8,
            RejectReason.INVALID_JSON,
            RejectReason.BAD_TIMESTAMP,
            RejectReason.LINE_TOO_LONG,
        ),
        declared="With the source's ``columns``, a column per declared key (``status: int``; "
        "a dotted path reaches into nested objects: ``http.status`` lands in "
        "``http_status``), null when the key is missing, JSON null or of another type; then "
        "``rescued`` (map): each declared key whose value was not of its column's type, with "
        "the value as text (null when every value fit).",
    ),
    FormatSpec(
        SourceFormat.RAW,
        "Any text: the event as it is.",
        (_MESSAGE, EVENT_LINES_COLUMN, CUT_COLUMN),
        "The batch's seal time.",
        (RejectReason.LINE_TOO_LONG,),
    ),
    FormatSpec(
        SourceFormat.CRI,
        "A container's log as containerd and CRI-O write it (``/var/log/pods``).",
        _CONTAINER_COLUMNS,
        _CONTAINER_TIME,
        PATTERN_REJECTS,
    ),
    FormatSpec(
        SourceFormat.DOCKER_JSON,
        "A container's log as Docker's ``json-file`` driver writes it.",
        _CONTAINER_COLUMNS,
        _CONTAINER_TIME,
        (
            RejectReason.INVALID_UTF8,
            RejectReason.INVALID_JSON,
            RejectReason.BAD_TIMESTAMP,
            RejectReason.LINE_TOO_LONG,
        ),
    ),
    FormatSpec(
        SourceFormat.LOGFMT,
        "logfmt: ``key=value`` pairs separated by spaces, one record a line (a value with "
        "a space double-quoted, a backslash escaping a quote, a backslash, a newline, a "
        "return or a tab in it; a key without ``=`` a flag).",
        (
            FormatColumn("level", ColumnType.STRING, "``level`` (or ``lvl``)."),
            FormatColumn("message", ColumnType.STRING, "``msg`` (or ``message``, or ``event``)."),
            FormatColumn(
                "fields",
                ColumnType.MAP,
                "Every key and its value, unquoted and unescaped (a flag's empty; a "
                "repeated key's first).",
            ),
        ),
        "The key ``time_field`` (default ``time``, else ``ts``, else ``timestamp``): epoch "
        "seconds or ISO 8601 (without an offset: UTC); the seal time when there is none.",
        PATTERN_REJECTS,
        declared="With the source's ``columns``, a column per declared key "
        "(``status: int``), null when it is missing or of another type; then ``rescued`` "
        "(map): each declared key whose value was not of its column's type, with the value "
        "(null when every value fit).",
    ),
    FormatSpec(
        SourceFormat.REGEX,
        "The source's own ``pattern``, a regular expression of named groups (Python's "
        "syntax, matched from the event's start; ``(?s)`` lets ``.`` cross a multiline "
        "event's lines).",
        (),
        "The source's ``time_column`` (a group declared ``timestamp``), read with its "
        "``time_layout`` (a Spark datetime pattern; default ISO 8601) in its ``timezone`` "
        "(default UTC) unless the text states an offset; the seal time without a "
        "``time_column``.",
        PATTERN_REJECTS,
        declared="A column per named group, in the pattern's order, of the type the "
        "source's ``columns`` give it (``string``, ``int``, ``long``, ``double``, "
        "``boolean``, ``timestamp``; default ``string``). An empty group is null, and so "
        "is a value that is not of its column's type (``abc`` for an ``int``); a "
        "``time_column`` that is not a time rejects the event (``bad_timestamp``).",
    ),
)
"""The generic formats, in :class:`SourceFormat`'s order."""
