"""Both ways of matching a format's pattern (``PatternMatcher``: the Java function that takes
every group from one match, and Spark SQL's ``rlike`` with a ``regexp_extract`` per group) parse
and reject every event alike, on logs real programs wrote (Python's ``logging``, a PySpark job's
log4j2) and lines at the formats' edges; the Java one matches each event once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession

from pipeline_core.config import MultilinePreset
from pipeline_core.testing import read_framed
from spark_jobs.formats import PatternMatcher, parse, pattern_matcher
from tests.spark_jobs.support import StagingRows, staged_items
from tests.spark_jobs.test_regex_format import COLUMNS, LAYOUT, LOG_FORMAT, PATTERN
from tests.spark_jobs.test_syslog_formats import BSD_CASES, RFC5424_CASES
from tests.support.log_programs import PYTHON_FORMATS, SparkJobLogs, write_python_log

pytestmark = pytest.mark.spark

Line = bytes | tuple[bytes, int, str | None]
NOT_RECORDS: list[Line] = [
    b"not a record at all",
    b"2026-11-28 10:00:00,123 INFO caf\xff",  # not UTF-8
    b"",
]


def results(frame: DataFrame) -> list[tuple[Any, ...]]:
    return sorted(tuple(row) for row in frame.collect())


def assert_matchers_agree(rows: DataFrame, fmt: str, **options: Any) -> tuple[int, int]:
    """Parse ``rows`` as ``fmt`` with each matcher: the same rows and rejects; the Java one
    matches once per event, in a plan with no ``regexp_extract`` of the text. Returns the
    rows and rejects."""
    parsed: dict[PatternMatcher, tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]] = {}
    for matcher in PatternMatcher:
        rows_of, rejects_of = parse(rows, fmt, matcher=matcher, **options)
        plan = rows_of._jdf.queryExecution().executedPlan().toString()  # before it runs
        parsed[matcher] = (results(rows_of), results(rejects_of))
        if matcher is PatternMatcher.JVM:
            assert plan.count("sluice_pattern_groups(") == 1, plan
            assert "regexp_extract(_text#" not in plan, plan
        else:
            assert "sluice_pattern_groups(" not in plan, plan
            assert "regexp_extract(_text#" in plan, plan
    assert parsed[PatternMatcher.JVM] == parsed[PatternMatcher.REGEX]
    landed, rejected = parsed[PatternMatcher.JVM]
    return len(landed), len(rejected)


def test_the_suites_session_has_the_java_matcher(spark: SparkSession) -> None:
    assert pattern_matcher(spark) is PatternMatcher.JVM


@pytest.mark.timeout(300)
@pytest.mark.parametrize("name", ["common", "basic"])
def test_python_logging_records_parse_alike(
    staging_rows: StagingRows, tmp_path: Path, name: str
) -> None:
    log = tmp_path / "app.log"
    write_python_log(log, events=300, tracebacks=0.3, stacks=0.05, fmt=PYTHON_FORMATS[name])
    events = staged_items(read_framed(log, MultilinePreset.PYTHON))
    rows = staging_rows([*events, *NOT_RECORDS], source="app")

    landed, rejected = assert_matchers_agree(
        rows, "python_logging", log_format=PYTHON_FORMATS[name]
    )

    assert (landed, rejected) == (300, len(NOT_RECORDS))


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_spark_jobs_log4j_records_parse_alike(
    staging_rows: StagingRows, spark_job: SparkJobLogs
) -> None:
    events = staged_items(read_framed(spark_job.log4j.path, MultilinePreset.JAVA))
    rows = staging_rows([*events, *NOT_RECORDS], source="spark")

    landed, rejected = assert_matchers_agree(rows, "spark_log4j")

    assert (landed, rejected) == (len(spark_job.log4j.events), len(NOT_RECORDS))


STRUCTURED: list[tuple[bytes, None]] = [
    (
        b'<34>1 2026-11-28T10:00:00Z h a - - [x@1 k="a\\"b" k="again"][y@2 p="c\\]d" q="e\\\\f"] m',
        None,
    ),
    (b'<34>1 2026-11-28T10:00:00Z h a - - [x@1 v="back\\slash" w=""][x@1 v="later"] m', None),
    (b'<34>1 2026-11-28T10:00:00Z h a - - [timeQuality tzKnown="1" isSynced="0"]', None),
    (b"<34>1 2026-11-28T10:00:00Z h a - - [id] [in the message]", None),
]
"""Structured data with escapes, a name repeated, an SD-ID twice, an element without
parameters."""


@pytest.mark.parametrize(
    ("fmt", "cases"),
    [("syslog_rfc5424", [*RFC5424_CASES, *STRUCTURED]), ("syslog_rfc3164", BSD_CASES)],
    ids=["rfc5424", "rfc3164"],
)
def test_syslog_messages_parse_alike(
    staging_rows: StagingRows, fmt: str, cases: list[tuple[bytes, object]]
) -> None:
    rows = staging_rows([line for line, _ in cases], source="syslog")

    landed, rejected = assert_matchers_agree(rows, fmt)
    if fmt == "syslog_rfc5424":
        (row,) = parse(staging_rows([STRUCTURED[0][0]], source="syslog"), fmt)[0].collect()
        assert row["structured_data"] == {"x@1.k": 'a"b', "y@2.p": "c]d", "y@2.q": "e\\f"}

    assert (landed, rejected) == (
        sum(reason is None for _, reason in cases),
        sum(reason is not None for _, reason in cases),
    )


@pytest.mark.timeout(300)
def test_a_sources_own_pattern_parses_alike(staging_rows: StagingRows, tmp_path: Path) -> None:
    log = tmp_path / "app.log"
    write_python_log(log, events=200, tracebacks=0.2, fmt=LOG_FORMAT, seed=3)
    events = staged_items(read_framed(log, MultilinePreset.PYTHON))
    rows = staging_rows([*events, *NOT_RECORDS], source="app")

    landed, rejected = assert_matchers_agree(
        rows, "regex", pattern=PATTERN, columns=COLUMNS, time_column="time", time_layout=LAYOUT
    )

    assert (landed, rejected) == (200, len(NOT_RECORDS))
