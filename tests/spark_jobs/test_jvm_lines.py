"""The JVM's line reader (``spark_jobs.jvm_lines``) against the Python workers' reader: the same
lines, multiline events, offsets, checks and messages; the jar built once per version; the
choice between them."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from pipeline_core.landing import JarBuildError, java_functions_jar
from pipeline_core.landing import _jar as jar_module
from pipeline_core.staging_contract import EventCut, EventRuns, EventSpan, Segment, SegmentKind
from spark_jobs.staging import SegmentReader, SegmentRow, read_lines, segment_reader

pytestmark = pytest.mark.spark

SEALED_AT = datetime(2026, 11, 22, 10, 0, 0, 123456, tzinfo=timezone.utc)
TRICKY = (
    b"caf\xc3\xa9 \xff\xfe\n\x00\x00\x00\n\nGET / HTTP/1.1\r\n\r\n"  # invalid UTF-8, NULs, CRLF
    + b"".join(b"x" * (n % 300) + b"\n" for n in range(2000))
    + b"unterminated end"
)


def segment_rows(path: Path, segments: list[Segment]) -> list[SegmentRow]:
    return [SegmentRow(str(path), 7, "web-1", SEALED_AT, segment) for segment in segments]


def lines(
    spark: SparkSession, rows: list[SegmentRow], reader: SegmentReader
) -> list[tuple[object, ...]]:
    frame = read_lines(spark, rows, 2, reader)
    return sorted(tuple(row) for row in frame.collect())


def tricky_part(tmp_path: Path) -> tuple[Path, list[Segment]]:
    """A part of three segments: the tricky lines, an over-long line's prefix, nothing."""
    path = tmp_path / "part-access-00000.lines"
    prefix = b"P" * 4096
    path.write_bytes(TRICKY + prefix)
    lines_count = TRICKY.count(b"\n") + 1
    return path, [
        Segment("a" * 16, 1000, 0, len(TRICKY), lines_count),
        Segment("b" * 16, 50, len(TRICKY), len(prefix), 1, SegmentKind.LONG_LINE, 9_000_000),
        Segment("c" * 16, 0, len(TRICKY) + len(prefix), 0, 0),
    ]


def test_the_suite_session_reads_local_parts_in_the_jvm_and_a_store_in_python(
    spark: SparkSession, tmp_path: Path
) -> None:
    path, _ = tricky_part(tmp_path)
    assert segment_reader(spark, [str(path)]) is SegmentReader.JVM
    assert segment_reader(spark, [str(path), "s3://bucket/p/part.lines"]) is SegmentReader.PYTHON


def test_both_readers_give_the_same_lines_offsets_and_batch_columns(
    spark: SparkSession, tmp_path: Path
) -> None:
    path, segments = tricky_part(tmp_path)
    rows = segment_rows(path, segments)

    in_jvm = lines(spark, rows, SegmentReader.JVM)

    assert in_jvm == lines(spark, rows, SegmentReader.PYTHON)
    assert len(in_jvm) == TRICKY.count(b"\n") + 2
    by_offset = {(row[0], row[1]): row for row in in_jvm}
    assert by_offset[("a" * 16, 1000)][2] == b"caf\xc3\xa9 \xff\xfe"
    assert by_offset[("a" * 16, 1009)][2] == b"\x00\x00\x00"
    assert by_offset[("a" * 16, 1014)][2] == b"GET / HTTP/1.1\r"
    (long_line,) = [row for row in in_jvm if row[0] == "b" * 16]
    assert long_line[1:] == (
        50,
        b"P" * 4096,
        1,
        None,
        7,
        "web-1",
        SEALED_AT.replace(tzinfo=None),
        9_000_000,
    )
    assert {row[3:5] for row in in_jvm} == {(1, None)}  # no events: a row per line
    assert max(int(str(row[1])) for row in in_jvm if row[0] == "a" * 16) == 1000 + len(TRICKY) - 16


def test_a_file_url_is_read_in_the_jvm(spark: SparkSession, tmp_path: Path) -> None:
    path, segments = tricky_part(tmp_path)
    as_url = [SegmentRow(f"file://{path}", 7, "web-1", SEALED_AT, s) for s in segments]
    assert segment_reader(spark, [f"file://{path}"]) is SegmentReader.JVM
    assert lines(spark, as_url, SegmentReader.JVM) == lines(
        spark, segment_rows(path, segments), SegmentReader.PYTHON
    )


@pytest.mark.parametrize("reader", list(SegmentReader))
def test_a_segment_of_other_lines_than_its_manifest_fails_alike(
    spark: SparkSession, tmp_path: Path, reader: SegmentReader
) -> None:
    path = tmp_path / "part-a-00000.lines"
    path.write_bytes(b"a\nbb\nccc\n")
    rows = segment_rows(path, [Segment("f" * 16, 0, 0, 2, 1), Segment("f" * 16, 2, 2, 7, 3)])

    message = r"part-a-00000\.lines: the segment at part_offset 2 \(7 bytes\) holds 2 lines, the "
    with pytest.raises(Exception, match=message + "manifest says 3"):
        read_lines(spark, rows, 2, reader).collect()


@pytest.mark.parametrize("reader", list(SegmentReader))
def test_a_short_or_missing_part_fails_alike(
    spark: SparkSession, tmp_path: Path, reader: SegmentReader
) -> None:
    path = tmp_path / "part-a-00000.lines"
    path.write_bytes(b"a\nbb\n")

    short = segment_rows(path, [Segment("f" * 16, 0, 2, 7, 2)])
    message = r"part-a-00000\.lines: short read: the segment at part_offset 2 needs bytes up to 9"
    with pytest.raises(Exception, match=message + ", the file has 5"):
        read_lines(spark, short, 2, reader).collect()
    missing = segment_rows(tmp_path / "missing.lines", [Segment("f" * 16, 0, 0, 1, 1)])
    with pytest.raises(Exception, match=r"missing\.lines: cannot read the segment at part_offset"):
        read_lines(spark, missing, 2, reader).collect()


JAVA_TRACE = (
    b"2026-11-22 10:00:00 ERROR Executor: task failed\r\n"
    b"java.lang.IllegalStateException: boom\r\n"
    b"\tat sluice.Main.run(Main.java:10)\r\n"
    b"Caused by: java.io.IOException: caf\xc3\xa9 \xff\r\n"
    b"\t... 3 more\r\n"
)


def events_part(tmp_path: Path) -> tuple[Path, list[Segment]]:
    """A part of four segments with multiline events (at the start and end of a segment, cut,
    one of a last line without its newline), one without, and an over-long line's prefix."""
    path = tmp_path / "part-app-00000.lines"
    first = b"plain\n" + JAVA_TRACE + b"\n" + b"x" * 70_000 + b"\n"
    second = JAVA_TRACE + b"tail 1\ntail 2"
    third = b"a\nb\n"
    prefix = b"P" * 1024
    path.write_bytes(first + second + third + prefix)
    return path, [
        Segment("a" * 16, 0, 0, len(first), 8, events=EventRuns.of([EventSpan(1, 5)])),
        Segment(
            "a" * 16,
            5000,
            len(first),
            len(second),
            7,
            events=EventRuns.of(
                [EventSpan(0, 5, EventCut.HEADLESS), EventSpan(5, 2, EventCut.LINES)]
            ),
        ),
        Segment("b" * 16, 0, len(first) + len(second), len(third), 2),
        Segment(
            "c" * 16,
            9,
            len(first) + len(second) + len(third),
            len(prefix),
            1,
            SegmentKind.LONG_LINE,
            2_000_000,
        ),
    ]


def test_both_readers_give_the_same_events(spark: SparkSession, tmp_path: Path) -> None:
    path, segments = events_part(tmp_path)
    rows = segment_rows(path, segments)

    in_jvm = lines(spark, rows, SegmentReader.JVM)

    assert in_jvm == lines(spark, rows, SegmentReader.PYTHON)
    batch = (7, "web-1", SEALED_AT.replace(tzinfo=None))
    trace = JAVA_TRACE[:-1]
    first = 6 + len(JAVA_TRACE)
    assert in_jvm == sorted(
        [
            ("a" * 16, 0, b"plain", 1, None, *batch, None),
            ("a" * 16, 6, trace, 5, None, *batch, None),
            ("a" * 16, first, b"", 1, None, *batch, None),
            ("a" * 16, first + 1, b"x" * 70_000, 1, None, *batch, None),
            ("a" * 16, 5000, trace, 5, "headless", *batch, None),
            ("a" * 16, 5000 + len(JAVA_TRACE), b"tail 1\ntail 2", 2, "lines", *batch, None),
            ("b" * 16, 0, b"a", 1, None, *batch, None),
            ("b" * 16, 2, b"b", 1, None, *batch, None),
            ("c" * 16, 9, b"P" * 1024, 1, None, *batch, 2_000_000),
        ]
    )


def test_the_tricky_lines_as_events_read_alike(spark: SparkSession, tmp_path: Path) -> None:
    path, (tricky, *_) = tricky_part(tmp_path)
    spans = EventRuns.of(EventSpan(n, 2 + n % 9) for n in range(1, tricky.lines - 10, 10))
    events = Segment("a" * 16, 1000, 0, tricky.length, tricky.lines, events=spans)
    rows = segment_rows(path, [events])

    in_jvm = lines(spark, rows, SegmentReader.JVM)

    assert in_jvm == lines(spark, rows, SegmentReader.PYTHON)
    assert len(in_jvm) == tricky.lines - sum(span.lines - 1 for span in spans)
    assert sum(int(str(row[3])) for row in in_jvm) == tricky.lines
    by_offset = {row[1]: row[2:5] for row in in_jvm}
    assert by_offset[1000] == (b"caf\xc3\xa9 \xff\xfe", 1, None)
    assert by_offset[1009] == (b"\x00\x00\x00\n\nGET / HTTP/1.1\r", 3, None)
    assert by_offset[1030] == (b"\r", 1, None)
    assert 1013 not in by_offset and 1014 not in by_offset


def test_both_readers_join_an_events_runs_across_the_other_streams_lines(
    spark: SparkSession, tmp_path: Path
) -> None:
    # A container's stderr traceback (lines 1, 2, 4 and 6), stdout lines between its lines, and
    # a stdout line written in two entries (3 and 5) around stderr's line 4.
    written = [
        b"out 0",
        b"err head",
        b"err frame 1",
        b"out P",
        b"err frame 2",
        b"out F",
        b"err end",
    ]
    path = tmp_path / "part-pods-00000.lines"
    path.write_bytes(b"\n".join(written) + b"\n")
    spans = EventRuns.of(
        [
            EventSpan(1, 2),
            EventSpan(3, 1),
            EventSpan(4, 1, head=0),
            EventSpan(5, 1, head=1),
            EventSpan(6, 1, head=0),
        ]
    )
    segment = Segment("d" * 16, 100, 0, path.stat().st_size, len(written), events=spans)
    rows = segment_rows(path, [segment])

    in_jvm = lines(spark, rows, SegmentReader.JVM)

    assert in_jvm == lines(spark, rows, SegmentReader.PYTHON)
    assert [(row[1], row[2], row[3]) for row in in_jvm] == [
        (100, b"out 0", 1),
        (106, b"err head\nerr frame 1\nerr frame 2\nerr end", 4),
        (127, b"out P\nout F", 2),
    ]


@pytest.mark.parametrize("reader", list(SegmentReader))
def test_a_span_joined_to_a_later_or_continuing_span_fails_alike(
    spark: SparkSession, tmp_path: Path, reader: SegmentReader
) -> None:
    path = tmp_path / "part-a-00000.lines"
    path.write_bytes(b"a\nb\nc\nd\n")
    bad = EventRuns((0, 1, 2), (1, 1, 1), (None, None, None), (-1, 0, 1))
    rows = segment_rows(path, [Segment("f" * 16, 0, 0, 8, 4, events=bad)])

    with pytest.raises(Exception, match=r"lists span 2 as continuing span 1, which is not an"):
        read_lines(spark, rows, 2, reader).collect()


@pytest.mark.parametrize("reader", list(SegmentReader))
def test_events_that_do_not_fit_their_segment_fail_alike(
    spark: SparkSession, tmp_path: Path, reader: SegmentReader
) -> None:
    path = tmp_path / "part-a-00000.lines"
    path.write_bytes(b"a\nbb\nccc\n")
    rows = segment_rows(
        path,
        [
            Segment("f" * 16, 0, 0, 2, 1),
            Segment(
                "f" * 16,
                2,
                2,
                7,
                2,
                events=EventRuns.of([EventSpan(0, 1, EventCut.BYTES), EventSpan(1, 2)]),
            ),
        ],
    )

    message = (
        r"part-a-00000\.lines: the segment at part_offset 2 \(7 bytes\) lists event 1 at lines "
        r"1\.\.2, not after the event before and among its 2 lines"
    )
    with pytest.raises(Exception, match=message):
        read_lines(spark, rows, 2, reader).collect()


def test_the_jar_is_built_once_per_version_of_its_source(tmp_path: Path) -> None:
    jar = java_functions_jar(tmp_path)
    assert jar is not None and jar.parent == tmp_path and jar.name.startswith("sluice-spark-")
    built = jar.stat().st_mtime_ns
    assert java_functions_jar(tmp_path) == jar and jar.stat().st_mtime_ns == built
    assert (
        java_functions_jar(tmp_path / "elsewhere", write=False) == tmp_path / "elsewhere" / jar.name
    )
    assert not (tmp_path / "elsewhere").exists()


def test_no_javac_means_no_jar(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert java_functions_jar(tmp_path) is None
    assert list(tmp_path.iterdir()) == []


def test_no_source_means_no_jar(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jar_module, "JAVA_SOURCES", tmp_path / "nowhere")
    assert java_functions_jar(tmp_path) is None


def test_a_source_javac_rejects_fails_with_its_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sources = tmp_path / "jvm" / "sluice" / "spark"
    sources.mkdir(parents=True)
    (sources / "Broken.java").write_text("package sluice.spark; class Broken { int x = ; }\n")
    monkeypatch.setattr(jar_module, "JAVA_SOURCES", tmp_path / "jvm")

    with pytest.raises(JarBuildError, match=r"Broken\.java.*illegal start of expression"):
        java_functions_jar(tmp_path / "jars")
    assert not any((tmp_path / "jars").glob("*.jar"))
