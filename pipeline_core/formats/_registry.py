"""The source formats: for each, its columns and their types, where its event time comes from,
and why its events can be rejected. The config's ``format`` choice, the lake tables' Iceberg
schemas (``pipeline_core.lake``), the landing's projection (``spark_jobs.formats``) and the
documentation's table of formats all derive from :data:`FORMATS`.

Every table also has the columns every source has (``event_id``, ``file_fingerprint``,
``byte_offset``, ``host``, ``event_time``, ``checkpoint_id``: ``pipeline_core.lake``); a
format's columns are those it adds.

The formats are defined by family, in the terms of ``_format_spec``: the web servers' access
logs (``_access_log_formats``), syslog (``_syslog_formats``), named programs' logging libraries
(``_application_log_formats``) and the formats of any program's output (``_generic_formats``).
:data:`FORMATS` gathers them in :class:`SourceFormat`'s order, one definition per format.
"""

from __future__ import annotations

from pipeline_core.formats._access_log_formats import ACCESS_LOG_FORMATS
from pipeline_core.formats._application_log_formats import APPLICATION_LOG_FORMATS
from pipeline_core.formats._format_spec import FormatSpec, SourceFormat
from pipeline_core.formats._generic_formats import GENERIC_FORMATS
from pipeline_core.formats._syslog_formats import SYSLOG_FORMATS

_DEFINED = {
    spec.name: spec
    for spec in (*ACCESS_LOG_FORMATS, *SYSLOG_FORMATS, *APPLICATION_LOG_FORMATS, *GENERIC_FORMATS)
}
FORMATS: dict[SourceFormat, FormatSpec] = {name: _DEFINED[name] for name in SourceFormat}
"""Every source format, by name, in :class:`SourceFormat`'s order."""


def format_spec(name: str) -> FormatSpec:
    """The format called ``name``.

    Raises:
        ValueError: there is no such format (the message lists them).
    """
    try:
        return FORMATS[SourceFormat(name)]
    except ValueError:
        known = ", ".join(FORMATS)
        raise ValueError(f"no source format {name!r} (formats: {known})") from None
