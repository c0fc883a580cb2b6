"""``nginx_combined``: nginx's (and Apache's) ``combined`` access log.

``$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent
"$http_referer" "$http_user_agent"``, as one anchored regular expression
(``NGINX_PATTERN``) defines it. A ``NginxScanner`` splits a matching line into its fields:
the Java function ``sluice.spark.NginxFields`` scans its bytes once (the landing's choice,
when its session has the function), or the pattern rewrites the line into its fields
joined by ``\\x01``, split once (a line that does not match comes back unchanged, which is
how a match is recognised). A raw control character inside a field (nginx writes them
escaped) makes the line not match; a trailing ``\\r`` (a CRLF line end) is allowed.
``remote_user`` is null for ``-``; ``body_bytes_sent`` is null
for ``-`` (Apache's spelling of zero). ``method``, ``path`` and ``protocol`` come from
``request`` when it is exactly three space-separated words, and are null otherwise
(``"-"``, a TLS handshake logged as escaped bytes...). Rejects: ``invalid_utf8``,
``no_match``, ``bad_timestamp`` (``time_local`` is not a valid ``dd/MMM/yyyy:HH:mm:ss Z``,
or is before year 1).
"""

from __future__ import annotations

from enum import Enum

from pyspark.sql import Column, DataFrame, Observation, SparkSession
from pyspark.sql import functions as F

from spark_jobs.formats._common import (
    FIELDS,
    MIN_MICROS,
    REASON,
    TIME,
    VALID,
    ParseResult,
    pattern_reason,
    split_classified,
    unless_equal,
    with_pattern_fields,
    with_text,
)
from spark_jobs.jvm_functions import NGINX_FIELDS as NGINX_FIELDS_FUNCTION
from spark_jobs.jvm_functions import enable_jvm_functions


class NginxScanner(Enum):
    """How an nginx line is split into its fields; both give the same fields and rejects."""

    JVM = "jvm"
    """The Java function ``sluice.spark.NginxFields``: one pass over the line's bytes, nothing
    decoded (``spark_jobs.jvm_functions``)."""
    REGEX = "regex"
    """``NGINX_PATTERN`` rewritten into ``\\x01``-joined fields and split: Spark SQL only."""


NGINX_TIME_FORMAT = "dd/MMM/yyyy:HH:mm:ss Z"
_NGINX_WORD = r'[^"\x00-\x20]++'
NGINX_PATTERN = (
    r"^([^\x00-\x20]++) - ([^\x00-\x20]++) \[([^\]\x00-\x1f]++)\] "
    rf'"(({_NGINX_WORD}) ({_NGINX_WORD}) ({_NGINX_WORD})|[^"\x00-\x1f]*+)" '
    r'(\d{3}) (\d++|-) "([^"\x00-\x1f]*+)" "([^"\x00-\x1f]*+)"\r?\z'
)
"""One group per ``NGINX_FIELDS`` entry, in order. Fields hold no control characters (nginx
writes them escaped), which also keeps the ``\\x01`` field separator out of them. The
request's words are captured only when it is exactly three words; otherwise those groups are
empty. Possessive quantifiers keep the match linear on long lines."""
NGINX_FIELDS = (
    "remote_addr",
    "remote_user",
    "time_local",
    "request",
    "method",
    "path",
    "protocol",
    "status",
    "body_bytes_sent",
    "http_referer",
    "http_user_agent",
)


def nginx_scanner(spark: SparkSession) -> NginxScanner:
    """``JVM`` when ``spark`` has the landing's Java functions, ``REGEX`` otherwise."""
    return NginxScanner.JVM if enable_jvm_functions(spark) else NginxScanner.REGEX


def parse_nginx_combined(
    rows: DataFrame,
    rejected: Observation | None = None,
    scanner: NginxScanner = NginxScanner.REGEX,
) -> ParseResult:
    """Parse nginx ``combined`` access-log lines (see the module doc) with ``scanner``."""
    field = _nginx_field
    classified = with_access_time(_with_nginx_fields(with_text(rows), scanner), field("time_local"))
    body_bytes = field("body_bytes_sent")
    return split_classified(
        classified,
        [
            field("remote_addr").alias("remote_addr"),
            unless_equal(field("remote_user"), "-").alias("remote_user"),
            field("request").alias("request"),
            unless_equal(field("method"), "").alias("method"),
            unless_equal(field("path"), "").alias("path"),
            unless_equal(field("protocol"), "").alias("protocol"),
            field("status").cast("int").alias("status"),
            unless_equal(body_bytes, "-").try_cast("long").alias("body_bytes_sent"),
            field("http_referer").alias("http_referer"),
            field("http_user_agent").alias("http_user_agent"),
        ],
        rejected,
    )


def with_access_time(fields: DataFrame, stamp: Column) -> DataFrame:
    """Classify an access log's lines split into ``FIELDS``: ``event_time`` from ``stamp``
    (their ``[dd/MMM/yyyy:HH:mm:ss Z]`` field's text, nginx's ``$time_local`` and Apache's
    ``%t``), null before year 1, and the reject reason (``pattern_reason``)."""
    time = F.try_to_timestamp(stamp, F.lit(NGINX_TIME_FORMAT))
    return (
        fields.withColumn(TIME, time)
        .withColumn("event_time", F.when(F.unix_micros(F.col(TIME)) >= MIN_MICROS, F.col(TIME)))
        .withColumn(REASON, pattern_reason())
    )


def _with_nginx_fields(rows: DataFrame, scanner: NginxScanner) -> DataFrame:
    """Add ``FIELDS``: the fields of a valid UTF-8 line that matches ``NGINX_PATTERN``, in
    ``NGINX_FIELDS`` order (a request's words null or empty unless it is three words); null for
    the other lines."""
    if scanner is NginxScanner.JVM:
        # Bytes in, bytes out: valid UTF-8 scans as its characters would.
        fields = NGINX_FIELDS_FUNCTION(F.col("line"))
        return rows.withColumn(FIELDS, F.when(F.col(VALID), fields))
    # Only valid UTF-8 survives the regex's round trip through a Java string unchanged. A
    # matched line loses its brackets and quotes.
    return with_pattern_fields(rows, NGINX_PATTERN, len(NGINX_FIELDS))


def _nginx_field(name: str) -> Column:
    """One field of a matched line as a string (null for a line that did not match)."""
    return F.get(F.col(FIELDS), NGINX_FIELDS.index(name)).cast("string")
