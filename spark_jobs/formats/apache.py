"""``apache_common`` and ``apache_combined``: Apache httpd's access logs in its two stock
``LogFormat`` strings (NCSA's Common Log Format, and ``combined``, which adds the
``Referer`` and ``User-Agent`` headers).

``%h %l %u %t "%r" %>s %b`` and ``%h %l %u %t "%r" %>s %b "%{Referer}i" "%{User-agent}i"``,
as one anchored regular expression each (:data:`APACHE_COMMON_PATTERN`,
:data:`APACHE_COMBINED_PATTERN`), rewritten into the line's fields in one pass.

Apache escapes what it writes of the request and of the headers: a ``"`` as ``\\"``, a
``\\`` as ``\\\\``, control characters and every byte past ASCII as ``\\xhh``. A quoted
field runs to the first ``"`` not escaped, and lands as written (escapes kept, as nginx's
fields do). A raw control character anywhere makes the line not match; a trailing ``\\r``
(a CRLF line end) is allowed. ``ident``, ``remote_user``, ``referer`` and ``user_agent`` are
null for ``-``; ``response_bytes`` is 0 for ``-`` (``%b``'s way of writing an empty body).
``method``, ``path`` and ``protocol`` come from the request when it is exactly three words
without a ``"``, and are null otherwise. The event time is ``%t``, with its own offset.
Rejects: ``invalid_utf8``, ``no_match``, ``bad_timestamp`` (``%t`` is not a valid
``dd/MMM/yyyy:HH:mm:ss Z``, or is before year 1).
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Observation
from pyspark.sql import functions as F

from spark_jobs.formats._common import (
    FIELDS,
    ParseResult,
    split_classified,
    unless_equal,
    with_pattern_fields,
    with_text,
)
from spark_jobs.formats.nginx import with_access_time

_TOKEN = r"[^\x00-\x20]++"
_WORD = r'[^"\x00-\x20]++'
_QUOTED = r'(?:[^"\\\x00-\x1f]|\\[^\x00-\x1f])*+'
"""A quoted field's text: up to the first ``"`` that no ``\\`` escapes."""
APACHE_COMMON_PATTERN = (
    rf"^({_TOKEN}) ({_TOKEN}) ({_TOKEN}) \[([^\]\x00-\x1f]++)\] "
    rf'"(({_WORD}) ({_WORD}) ({_WORD})|{_QUOTED})" (\d{{3}}) (\d++|-)'
)
"""The common fields' groups, in :data:`COMMON_FIELDS` order (unanchored at the end)."""
APACHE_COMBINED_PATTERN = rf'{APACHE_COMMON_PATTERN} "({_QUOTED})" "({_QUOTED})"'
COMMON_FIELDS = (
    "remote_host",
    "ident",
    "remote_user",
    "time",
    "request",
    "method",
    "path",
    "protocol",
    "status",
    "response_bytes",
)
COMBINED_FIELDS = (*COMMON_FIELDS, "referer", "user_agent")
_LINE_END = r"\r?\z"


def parse_apache(
    rows: DataFrame, combined: bool, rejected: Observation | None = None
) -> ParseResult:
    """Parse Apache access-log lines: ``combined`` or, if not, common (see the module doc)."""
    fields = COMBINED_FIELDS if combined else COMMON_FIELDS
    pattern = (APACHE_COMBINED_PATTERN if combined else APACHE_COMMON_PATTERN) + _LINE_END

    def field(name: str) -> Column:
        return F.get(F.col(FIELDS), fields.index(name))

    classified = with_access_time(
        with_pattern_fields(with_text(rows), pattern, len(fields)), field("time")
    )
    size = field("response_bytes")
    columns = [
        field("remote_host").alias("remote_host"),
        unless_equal(field("ident"), "-").alias("ident"),
        unless_equal(field("remote_user"), "-").alias("remote_user"),
        field("request").alias("request"),
        *(unless_equal(field(word), "").alias(word) for word in ("method", "path", "protocol")),
        field("status").cast("int").alias("status"),
        F.when(size == "-", F.lit(0)).otherwise(size.try_cast("long")).alias("response_bytes"),
    ]
    if combined:
        columns += [unless_equal(field(name), "-").alias(name) for name in fields[-2:]]
    return split_classified(classified, columns, rejected)
