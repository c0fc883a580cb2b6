"""The multiline presets against logs the real programs wrote: Python's ``logging`` (in four
formats, with chained exceptions, exception groups, carets and ``stack_info``), a PySpark job's
log4j2 log (its executors' ``PythonException``, ``Caused by:``, ``... N more``, Spark's query
contexts) and its driver's Python log (pyspark's exceptions, ``Py4JJavaError``). Each log is
framed whole (``complete``) and its events must be exactly the records the program wrote, as its
own second handler (appender) recorded them (:mod:`tests.support.log_programs`).
"""

from __future__ import annotations

import os
import re
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pipeline_core.config import MultilinePreset
from pipeline_core.source import _multiline
from pipeline_core.source._multiline import MultilineRule, frame
from pipeline_core.source._preset_lines import LOOKAHEAD_LINES
from tests.support.log_programs import (
    PYTHON_FORMATS,
    PYTHON_START_PATTERNS,
    SPARK_START_PATTERN,
    SparkJobLogs,
    WrittenLog,
    start_python_logger,
    write_python_log,
)

PYTHON = MultilineRule((MultilinePreset.PYTHON,))
JAVA = MultilineRule((MultilinePreset.JAVA,))


def framed_events(data: bytes, rule: MultilineRule, *, complete: bool = True) -> list[bytes]:
    """The events ``frame`` finds in ``data`` (each its bytes), everything handed out if
    ``complete``."""
    framing = frame(
        data, rule, complete=complete, max_lines=10_000, max_bytes=1 << 20, filled=False
    )
    if complete:
        assert framing.length == len(data)
    lines = data[: framing.length].splitlines(keepends=True)
    assert len(lines) == framing.lines
    events: list[bytes] = []
    line = 0
    for span in framing.spans:
        assert span.cut is None
        events.extend(lines[line : span.first_line])
        events.append(b"".join(lines[span.first_line : span.first_line + span.lines]))
        line = span.first_line + span.lines
    events.extend(lines[line:])
    assert len(events) == framing.events
    return events


def assert_same_events(found: list[bytes], written: list[bytes]) -> None:
    """``found`` is ``written``; if not, the first event that differs is shown."""
    for number, (event, record) in enumerate(zip(found, written, strict=False)):
        assert event == record, f"event {number} of {len(written)} differs"
    assert len(found) == len(written)


# -- Python's logging ----------------------------------------------------------------------------


@pytest.fixture(scope="module", params=sorted(PYTHON_FORMATS))
def python_log(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> tuple[str, WrittenLog]:
    """2000 records in one of the formats, three in ten with a traceback, one in twenty with
    ``stack_info``."""
    name: str = request.param
    path = tmp_path_factory.mktemp("python-log") / "app.log"
    events = write_python_log(
        path, events=2000, tracebacks=0.3, stacks=0.05, fmt=PYTHON_FORMATS[name], seed=7
    )
    return name, WrittenLog(path, events)


def test_should_write_python_logs_whose_records_are_the_file(
    python_log: tuple[str, WrittenLog],
) -> None:
    _, log = python_log
    data = log.path.read_bytes()
    assert b"".join(log.events) == data
    assert len(log.events) == 2000
    multiline = [event for event in log.events if event.count(b"\n") > 1]
    assert 500 < len(multiline) < 900
    kinds = [
        rb"^Traceback \(most recent call last\):$",
        rb"^The above exception was the direct cause of the following exception:$",
        rb"^During handling of the above exception, another exception occurred:$",
        rb"^Stack \(most recent call last\):$",
        rb"^ConnectionError: peer reset$",  # a cause that was never raised: no frames
        rb"^TimeoutError$",  # an exception without a message
        rb"\[Previous line repeated \d+ more times\]$",
    ]
    if sys.version_info >= (3, 11):  # exception groups and carets came with Python 3.11
        kinds += [
            rb"^ +\+-\+-+ 1 -+$",  # an exception group's first member
            rb"^ +~*\^+~*\^*$",  # carets under a frame's source line
        ]
    for kind in kinds:
        assert re.search(kind, data, re.MULTILINE), kind


@pytest.mark.parametrize("rule", [PYTHON, JAVA], ids=["python", "java"])
def test_should_frame_python_logging_into_its_records_with_the_preset(
    python_log: tuple[str, WrittenLog], rule: MultilineRule
) -> None:
    _, log = python_log
    assert_same_events(framed_events(log.path.read_bytes(), rule), log.events)


def test_should_frame_python_logging_into_its_records_with_a_start_pattern(
    python_log: tuple[str, WrittenLog],
) -> None:
    name, log = python_log
    rule = MultilineRule(start_pattern=PYTHON_START_PATTERNS[name])
    assert_same_events(framed_events(log.path.read_bytes(), rule), log.events)


def test_should_split_only_records_whose_messages_have_lines_of_their_own(
    tmp_path: Path,
) -> None:
    """The presets' known limit: a message's (or an exception message's, or a note's) later
    lines that are not indented look like records of their own. The preset splits those
    records there and no other, and never joins two; a start pattern frames them whole."""
    path = tmp_path / "app.log"
    written = write_python_log(path, events=600, tracebacks=0.1, multiline=0.15, seed=3)
    data = path.read_bytes()
    found = framed_events(data, PYTHON)
    boundaries = {0}
    for event in found:
        boundaries.add(max(boundaries) + len(event))
    split = []
    offset = 0
    for record in written:
        assert offset in boundaries  # no preset event runs over two records
        inner = {b - offset for b in boundaries if offset < b < offset + len(record)}
        if inner:
            split.append(record)
        offset += len(record)
    messages = [r for r in written if b" read 2 rows:\n" in r or b"ValueError: bad rows:\n" in r]
    assert split == messages
    assert len(messages) > 40
    rule = MultilineRule(start_pattern=PYTHON_START_PATTERNS["common"])
    assert_same_events(framed_events(data, rule), written)


@pytest.mark.timeout(60)
def test_should_frame_the_log_of_a_logger_killed_while_writing(tmp_path: Path) -> None:
    """A program writing 400 records a second, SIGKILLed: every record but the last ones (which
    may yet grow, or be joined by the lines after them) is handed out whole; the log holds what
    the truth lists, and at most one record more (written to the log, not yet to the truth)."""
    logger = start_python_logger(
        tmp_path / "app.log", tmp_path / "truth.jsonl", rate=400.0, tracebacks=0.3, seed=11
    )
    try:
        logger.wait_for(300)
    finally:
        os.killpg(logger.process.pid, signal.SIGKILL)
        logger.process.wait(timeout=10)
    written = logger.written()
    data = logger.path.read_bytes()
    assert data.startswith(b"".join(written))
    assert data.count(b"\n", len(b"".join(written))) <= 200  # one record at most: few lines
    handed = framed_events(data, PYTHON, complete=False)
    assert len(written) - 1 - LOOKAHEAD_LINES <= len(handed) <= len(written)
    assert_same_events(handed, written[: len(handed)])


def test_should_frame_the_same_events_wherever_a_read_ends(tmp_path: Path) -> None:
    """A read may end at any line: what it hands out, then what the next read (from there)
    finds, are the events the whole log holds, whatever the rule looks at after a line (the
    exception's line, a cause never raised)."""
    path = tmp_path / "app.log"
    written = write_python_log(path, events=120, tracebacks=0.4, stacks=0.05, seed=3)
    data = path.read_bytes()
    for rule in (PYTHON, JAVA):
        whole = framed_events(data, rule)
        assert_same_events(whole, written)
        end = 0
        while (end := data.find(b"\n", end) + 1) > 0:
            handed = frame(
                data[:end], rule, complete=False, max_lines=10_000, max_bytes=1 << 20, filled=False
            )
            head = framed_events(data[: handed.length], rule)
            rest = framed_events(data[handed.length :], rule)
            assert head + rest == whole, f"{rule.presets[0]}: a read ending at byte {end}"


# -- a PySpark job -------------------------------------------------------------------------------


@pytest.mark.slow
def test_should_run_a_spark_job_whose_log4j_log_holds_its_failures(spark_job: SparkJobLogs) -> None:
    data = spark_job.log4j.path.read_bytes()
    assert b"".join(spark_job.log4j.events) == data
    assert len(spark_job.log4j.events) > 100
    for kind in (
        rb"^\S+ \S+ ERROR Executor: Exception in task .*\n"
        rb"org\.apache\.spark\.api\.python\.PythonException: "
        rb".*Traceback \(most recent call last\):$",
        rb"^ValueError: cannot parse 'b'$",
        rb"^\tat org\.apache\.spark\.",
        rb"^Caused by: java\.io\.IOException: not a gzip file$",
        rb"^\t\.\.\. \d+ more$",
        rb"^Driver stacktrace:$",
        rb"^\tSuppressed: java\.lang\.IllegalStateException: closing the reader failed$",
        rb"^== SQL \(line 2, position 3\) ==\n  10 div \(id\n  \^+\n",
        rb'^== DataFrame ==\n"__truediv__" was called from\n',
    ):
        assert re.search(kind, data, re.MULTILINE), kind


@pytest.mark.slow
def test_should_frame_sparks_log4j_log_into_its_records_with_the_java_preset(
    spark_job: SparkJobLogs,
) -> None:
    log = spark_job.log4j
    assert_same_events(framed_events(log.path.read_bytes(), JAVA), log.events)


@pytest.mark.slow
def test_should_frame_sparks_log4j_log_into_its_records_with_a_start_pattern(
    spark_job: SparkJobLogs,
) -> None:
    log = spark_job.log4j
    rule = MultilineRule(start_pattern=SPARK_START_PATTERN)
    assert_same_events(framed_events(log.path.read_bytes(), rule), log.events)


@pytest.mark.slow
@pytest.mark.parametrize(
    "rule",
    [PYTHON, JAVA, MultilineRule(start_pattern=PYTHON_START_PATTERNS["common"])],
    ids=["python", "java", "start_pattern"],
)
def test_should_frame_the_spark_drivers_python_log_into_its_records(
    spark_job: SparkJobLogs, rule: MultilineRule
) -> None:
    log = spark_job.driver
    data = log.path.read_bytes()
    assert b"".join(log.events) == data
    for kind in (
        rb"^pyspark\.errors\.exceptions\.captured\.PythonException: ",
        rb"^py4j\.protocol\.Py4JJavaError: An error occurred while calling .*\n: org\.apache\.",
        rb"^Caused by: java\.io\.IOException: Input path does not exist: ",
        rb"^== SQL \(line 2, position 3\) ==$",
    ):
        assert re.search(kind, data, re.MULTILINE), kind
    assert_same_events(framed_events(data, rule), log.events)


@pytest.fixture(scope="module")
def one_line_records(tmp_path_factory: pytest.TempPathFactory) -> list[bytes]:
    """50 records of Python's ``logging``, none with a traceback: a line each."""
    path = tmp_path_factory.mktemp("one-line") / "app.log"
    records = write_python_log(path, events=50, tracebacks=0.0, stacks=0.0)
    assert all(record.count(b"\n") == 1 for record in records)
    return records


@pytest.mark.parametrize("complete", [True, False], ids=["complete", "may-grow"])
@pytest.mark.parametrize("filled", [True, False], ids=["filled", "not-filled"])
@pytest.mark.parametrize("lines", [1, 2, 3, 4, 50])
@pytest.mark.parametrize("preset", [MultilinePreset.PYTHON, MultilinePreset.JAVA])
def test_should_frame_reads_of_one_line_events_as_the_general_way_does(
    one_line_records: list[bytes],
    monkeypatch: pytest.MonkeyPatch,
    complete: bool,
    filled: bool,
    lines: int,
    preset: MultilinePreset,
) -> None:
    """A read whose lines all begin events (Python's ``logging`` of one-line records) is
    framed without the event arrays (by the compiled pass without the lines' offsets, or
    after the presets found no continuation, where it is not built); the answer is the
    general way's, a line over ``max_bytes`` included."""
    data = b"".join(one_line_records[:lines])
    longest = max(len(line) + 1 for line in data.splitlines())
    rule = MultilineRule((preset,))
    framings = []
    taken: list[bool] = []
    short_ways: dict[str, Callable[..., _multiline.Framing | None]] = {
        name: getattr(_multiline, name) for name in ("_one_line_read", "_single_lines")
    }

    def spied(name: str) -> Callable[..., _multiline.Framing | None]:
        def short_way(*args: Any, **kwargs: Any) -> _multiline.Framing | None:
            framing = short_ways[name](*args, **kwargs)
            taken.append(framing is not None)
            return framing

        return short_way

    for fast in (True, False):
        for name in short_ways:
            monkeypatch.setattr(_multiline, name, spied(name) if fast else lambda *a, **k: None)
        framings.append(
            [
                frame(data, rule, complete=complete, max_lines=1000, max_bytes=b, filled=filled)
                for b in (longest, longest - 1)
            ]
        )

    assert framings[0] == framings[1]
    assert framings[0][0].events == framings[0][0].lines  # one line each
    assert any(taken[:2]) == (complete or lines > 1 + LOOKAHEAD_LINES)  # the short way was taken
