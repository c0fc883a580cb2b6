"""Syslog's messages: RFC 5424's, and BSD syslog's (RFC 3164) as rsyslog writes its files."""

from __future__ import annotations

from pipeline_core.formats._format_spec import (
    PATTERN_REJECTS,
    ColumnType,
    FormatColumn,
    FormatSpec,
    SourceFormat,
)

_SYSLOG_PRIORITY = (
    FormatColumn("facility", ColumnType.INT, "The ``PRI``'s facility (0-23: ``PRI // 8``)."),
    FormatColumn("severity", ColumnType.INT, "The ``PRI``'s severity (0-7: ``PRI % 8``)."),
    FormatColumn(
        "level",
        ColumnType.STRING,
        "The severity's keyword, as ``logger -p`` and rsyslog name it: ``emerg``, ``alert``, "
        "``crit``, ``err``, ``warning``, ``notice``, ``info``, ``debug``.",
    ),
)

SYSLOG_FORMATS: tuple[FormatSpec, ...] = (
    FormatSpec(
        SourceFormat.SYSLOG_RFC5424,
        "Syslog messages of RFC 5424, one a line: ``<PRI>VERSION TIMESTAMP HOSTNAME "
        "APP-NAME PROCID MSGID STRUCTURED-DATA MSG``, as rsyslog writes them with "
        "``RSYSLOG_SyslogProtocol23Format`` (and as they come over the wire).",
        (
            *_SYSLOG_PRIORITY,
            FormatColumn("version", ColumnType.INT, "``VERSION`` (1)."),
            FormatColumn("hostname", ColumnType.STRING, "``HOSTNAME``; null for -."),
            FormatColumn("app_name", ColumnType.STRING, "``APP-NAME``; null for -."),
            FormatColumn("proc_id", ColumnType.STRING, "``PROCID``; null for -."),
            FormatColumn("msg_id", ColumnType.STRING, "``MSGID``; null for -."),
            FormatColumn(
                "structured_data",
                ColumnType.MAP,
                "``STRUCTURED-DATA``: each parameter's value (its ``\\\"``, "
                "``\\\\`` and ``\\]`` unescaped) keyed ``<SD-ID>.<PARAM-NAME>`` "
                "(``origin.ip``, ``exampleSDID@32473.eventID``); a name repeated in an "
                "element keeps its first value; an element without parameters adds no "
                "key. Empty for -.",
            ),
            FormatColumn(
                "message",
                ColumnType.STRING,
                "``MSG`` without its UTF-8 byte order mark; null when the message has none.",
            ),
        ),
        "``TIMESTAMP`` (RFC 3339: ``2026-11-28T13:00:00.123456+01:00``, its own offset, "
        "fractions to the microsecond); the seal time for a ``-`` timestamp.",
        PATTERN_REJECTS,
    ),
    FormatSpec(
        SourceFormat.SYSLOG_RFC3164,
        "BSD syslog lines, ``Mmm dd HH:MM:SS HOSTNAME TAG[PID]: MSG``, as rsyslog writes "
        "its files with ``RSYSLOG_TraditionalFileFormat``, with or without the ``<PRI>`` a "
        "message comes over the wire with; a line in ``RSYSLOG_FileFormat`` (Debian's "
        "``/var/log/syslog`` since 12), whose time is RFC 3339, is read alike.",
        (
            *(
                FormatColumn(c.name, c.type, c.doc + " Null without a ``<PRI>``.")
                for c in _SYSLOG_PRIORITY
            ),
            FormatColumn(
                "hostname",
                ColumnType.STRING,
                "``HOSTNAME``; null for - (rsyslog's for a message that named none).",
            ),
            FormatColumn(
                "app_name", ColumnType.STRING, "The ``TAG`` without its ``[PID]`` and colon."
            ),
            FormatColumn(
                "proc_id", ColumnType.STRING, "The ``PID`` in the tag's brackets, or null."
            ),
            FormatColumn(
                "message", ColumnType.STRING, "``MSG``: what follows the tag and one space."
            ),
        ),
        "``Mmm dd HH:MM:SS`` in the source's ``timezone`` (default UTC), its year that of "
        "the seal time in that zone, or the year before when its month is after the seal "
        "time's; an RFC 3339 time (``RSYSLOG_FileFormat``) with its own offset, to the "
        "microsecond.",
        PATTERN_REJECTS,
    ),
)
"""The syslog formats, in :class:`SourceFormat`'s order."""
