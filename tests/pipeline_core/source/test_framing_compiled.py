"""The compiled line tests (``pipeline_core/source/_framing.c``) against the NumPy ones they
replace (``pipeline_core.source._preset_lines``): the same lines, and the same judgement of
each line by every preset, on logs the real programs wrote (Python's ``logging`` in every
format, a PySpark job's log4j2 log and its driver's Python log) and on reads drawn from the
presets' own words cut anywhere.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline_core.config import MultilinePreset
from pipeline_core.source import _preset_lines
from pipeline_core.source._multiline import MultilineRule, frame
from pipeline_core.source._preset_lines import (
    line_starts,
    numpy_preset_continuing,
    preset_continuing,
    use_compiled,
)
from tests.support.log_programs import PYTHON_FORMATS, SparkJobLogs, write_python_log

PRESET_SETS = [
    (MultilinePreset.PYTHON,),
    (MultilinePreset.JAVA,),
    (MultilinePreset.GO,),
    (MultilinePreset.PYTHON, MultilinePreset.GO),
]


def numpy_starts(data: bytes) -> list[int]:
    was = use_compiled(False)
    try:
        starts: list[int] = line_starts(data).tolist()
        return starts
    finally:
        use_compiled(was)


def one_line_reference(data: bytes) -> tuple[int, int] | None:
    """What ``one_line_events`` tells of ``data`` (its lines and the longest, with its
    newline; None if a line may continue another), found with NumPy."""
    starts = np.array(numpy_starts(data), dtype=np.int64)
    if not len(starts):
        return (0, 0)
    if _preset_lines._may_continue()[np.frombuffer(data, dtype=np.uint8)[starts]].any():
        return None
    return len(starts), int(np.diff(np.append(starts, len(data))).max())


def assert_same_judgement(data: bytes) -> None:
    """The compiled tests find ``data``'s lines and judge each as NumPy does, by every preset;
    a difference names the first line that differs."""
    starts = line_starts(data)
    assert starts.tolist() == numpy_starts(data)
    if not len(starts):
        return
    for presets in PRESET_SETS:
        reference = numpy_preset_continuing(presets, data, starts)
        compiled = preset_continuing(presets, data, starts)
        differ = np.flatnonzero(compiled != reference)
        if differ.size:
            line = int(differ[0])
            text = data[starts[line] : data.find(b"\n", starts[line]) + 1 or len(data)]
            pytest.fail(
                f"{[p.value for p in presets]}: line {line} ({text!r}) continues: compiled "
                f"{bool(compiled[line])}, numpy {bool(reference[line])}"
            )


def test_should_be_built_by_the_projects_install() -> None:
    """``make setup`` builds the extension (setup.py; a C compiler is part of the machine):
    the collector's framing runs it."""
    compiled_module = _preset_lines.compiled_module()
    assert compiled_module is not None
    assert _preset_lines.compiled()
    # loaded from the package, not from a stray build elsewhere
    assert Path(compiled_module.__file__ or "").parent == Path(_preset_lines.__file__).parent


@pytest.fixture(scope="module", params=sorted(PYTHON_FORMATS))
def python_log(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """1000 records of Python's ``logging`` in one format, three in ten with a traceback, some
    with ``stack_info`` or messages of several lines."""
    path = tmp_path_factory.mktemp("python-log") / "app.log"
    write_python_log(
        path,
        events=1000,
        tracebacks=0.3,
        stacks=0.05,
        multiline=0.05,
        fmt=PYTHON_FORMATS[request.param],
        seed=11,
    )
    return path.read_bytes()


def test_should_judge_python_logging_as_numpy_does(python_log: bytes) -> None:
    assert_same_judgement(python_log)
    for cut in (1, 777, len(python_log) // 3, len(python_log) - 5):  # reads that end anywhere
        head = python_log[:cut]
        assert_same_judgement(head[: head.rfind(b"\n") + 1] or head)
        assert_same_judgement(head)


@pytest.mark.slow
def test_should_judge_a_spark_jobs_logs_as_numpy_does(spark_job: SparkJobLogs) -> None:
    assert_same_judgement(spark_job.log4j.path.read_bytes())
    assert_same_judgement(spark_job.driver.path.read_bytes())


_WORD_LINES = [
    b"Traceback (most recent call last):",
    b"Traceback (most ",
    # the words inside a line, after a partial match, and cut short of their end
    b"app: TTraceback (most recent call last): x",
    b"Traceback (most recent call last)",
    b"Stack (most recent call last):",
    b"During handling of the above exception, another exception occurred:",
    b"The above exception was the direct cause of the following exception:",
    b": org.apache.spark.SparkException: Job aborted",
    b"Caused by: java.io.IOException: boom",
    b"Suppressed: x",
    b"Driver stacktrace:",
    b"== SQL (line 1, position 8) ==",
    b"== SQL ==",
    b"== SQLX ==",
    b"== DataFrame ==",
    b'"divide" was called from',
    b"goroutine 1 [running]:",
    b"[signal SIGSEGV: segmentation violation]",
    b"created by main.main",
    b"exit status 2",
]
_SHAPES = st.one_of(
    st.sampled_from(_WORD_LINES),
    st.builds(lambda n: b'  File "x.py", line ' + str(n).encode(), st.integers(0, 99)),
    st.sampled_from([b"", b"\r", b"\t", b" ", b"    ^^^^", b"  ~~^~~", b"^"]),
    st.sampled_from([b"\tat a.B.c(B.java:1)", b"    at x", b"\t... 3 more"]),
    st.sampled_from([b"... 12 more", b"2026-11-30 12:00:00,123 ERROR app: failed"]),
    # exception names around the NumPy tests' 32-byte window, with and without a message
    st.builds(
        lambda name, tail: name + tail,
        st.text("abcXYZ_.09", min_size=1, max_size=40).map(lambda t: ("E" + t).encode()),
        st.sampled_from([b"", b":", b": boom", b":\tx", b":\r", b"\r", b" x", b":x", b"::"]),
    ),
    st.builds(
        lambda package, name, tail: package + name + tail,
        st.sampled_from([b"java.lang.", b"org.a$b.", b"a..b.", b".x.", b"x.", b""]),
        st.sampled_from([b"IllegalStateException", b"OutOfMemoryError", b"MyFailure", b"Foo"]),
        st.sampled_from([b"", b": boom", b":", b"\r", b"x", b".y"]),
    ),
    st.builds(
        lambda name, args: name + args,
        st.sampled_from([b"main.main", b"main.(*T).Run", b"a/b.c", b"x", b"", b"f g"]),
        st.sampled_from([b"()", b"(0xc0)", b"()\r", b"(", b")", b"() x", b"(a)(b)"]),
    ),
    st.binary(max_size=24).map(lambda b: b.replace(b"\n", b"")),
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lines=st.lists(_SHAPES, min_size=1, max_size=40), ending=st.sampled_from([b"\n", b"\r\n"]))
def test_should_judge_reads_of_the_presets_words_as_numpy_does(
    lines: list[bytes], ending: bytes
) -> None:
    data = ending.join(lines) + ending
    assert_same_judgement(data)
    assert_same_judgement(data[:-1])  # a last line without its newline


def test_should_judge_a_read_of_more_lines_than_it_first_makes_room_for() -> None:
    """The lines' offsets are given room for lines of 32 bytes on average, grown as needed."""
    assert_same_judgement(b"\n" * 70_000 + b"x\n  at y\n\r\n" * 20_000 + b"tail")


def test_should_find_every_newline_at_every_place_of_a_block() -> None:
    """The newlines are looked for 64 bytes at a time: one at each offset of a block, before
    and after its edges, in reads of every size around a few blocks, sparse and dense."""
    rng = np.random.default_rng(64)
    for size in range(0, 300):
        for density in (0.0, 0.02, 0.3, 1.0):
            data = bytes(np.where(rng.random(size) < density, ord("\n"), ord("x")).astype(np.uint8))
            assert line_starts(data).tolist() == numpy_starts(data), (size, density)
    for place in range(0, 200):
        data = b"x" * place + b"\n" + b"y" * (199 - place)
        assert line_starts(data).tolist() == numpy_starts(data), place


def test_every_newline_finder_of_the_processor_finds_the_same_lines(python_log: bytes) -> None:
    """The widest vector compare the processor has finds the newlines; each it has (and the
    one without vectors) finds the same lines as NumPy, and tells reads of one-line events
    as NumPy does."""
    module = _preset_lines.compiled_module()
    assert module is not None, "the install builds the compiled line tests"
    in_use, names = module.newline_finder()
    assert in_use == names[0] and "scalar" in names
    rng = np.random.default_rng(7)
    reads = [python_log[: 1 << 20], b"\n" * 5000, b"x" * 5000]
    reads += [
        bytes(rng.choice([10, 120], size, p=[0.1, 0.9]).astype(np.uint8)) for size in range(130)
    ]
    reads += [b"2026 x\n" * 40, b"2026 x\n" * 40 + b"  at y\n", b"a\n" * 70 + b"Traceback"]
    try:
        for name in names:
            module.newline_finder(name)
            for data in reads:
                assert line_starts(data).tolist() == numpy_starts(data), (name, len(data))
                found = _preset_lines.one_line_events((MultilinePreset.PYTHON,), data)
                assert found == one_line_reference(data), (name, len(data))
    finally:
        module.newline_finder(in_use)
    with pytest.raises(ValueError, match="no newline finder"):
        module.newline_finder("neon")


@pytest.mark.parametrize(
    ("max_lines", "max_bytes"), [(500, 1 << 20), (8, 2048)], ids=["within", "cut"]
)
def test_should_frame_a_traceback_log_into_the_same_events_either_way(
    python_log: bytes, max_lines: int, max_bytes: int
) -> None:
    """The whole framing, read in 64 KiB pieces as the collector reads, with the compiled tests
    and with NumPy's: the same lengths, lines and events, also where events are cut."""
    rule = MultilineRule((MultilinePreset.PYTHON,))
    results = []
    for compiled in (True, False):
        was = use_compiled(compiled)
        try:
            position, found = 0, []
            while position < len(python_log):
                data = python_log[position : position + 65536]
                complete = position + len(data) == len(python_log)
                framing = frame(
                    data,
                    rule,
                    complete=complete,
                    max_lines=max_lines,
                    max_bytes=max_bytes,
                    filled=True,
                )
                found.append((framing.length, framing.lines, framing.events, framing.spans))
                position += framing.length
            results.append(found)
        finally:
            use_compiled(was)
    assert results[0] == results[1]
    assert len(results[0]) > 1
    cut = any(span.cut is not None for *_, spans in results[0] for span in spans)
    assert cut == (max_lines == 8)


def test_should_refuse_starts_that_are_not_the_datas_lines() -> None:
    compiled_module = _preset_lines.compiled_module()
    assert compiled_module is not None
    starts = np.array([0, 50], dtype=np.int64)
    with pytest.raises(ValueError, match="not the lines"):
        compiled_module.preset_continuing(b"a\nb\n", starts, 1)


def test_should_read_and_judge_in_one_call_as_a_read_then_its_judgement(
    python_log: bytes, tmp_path: Path
) -> None:
    """``read_judged`` (the read and the presets' judgement in one release of the GIL) reads
    what a read reads and judges its whole lines as ``one_line_events`` and ``framed_lines``
    do, at every place of a real program's log, by every preset; ``frame`` given what it
    judged frames the read as it frames it alone."""
    path = tmp_path / "app.log"
    path.write_bytes(python_log)
    rule = MultilineRule((MultilinePreset.PYTHON,))
    fd = os.open(path, os.O_RDONLY)
    try:
        for presets in PRESET_SETS:
            for offset in range(0, len(python_log), 40_000):
                read = _preset_lines.read_judged(presets, fd, offset, 65536, 500, 1 << 20, 2)
                assert read is not None, "the install builds the compiled line tests"
                data, judged = read
                assert data == python_log[offset : offset + 65536]
                whole = bytes(data[: data.rfind(b"\n") + 1])
                assert judged is not None and judged.length == len(whole)
                one_line = _preset_lines.one_line_events(presets, whole)
                assert judged.one_line == one_line
                if one_line is not None:
                    assert judged.framed is None
                    continue
                reference = _preset_lines.framed_lines(presets, whole, 500, 1 << 20, 2)
                assert reference is not None and judged.framed is not None
                starts, marks, runs = judged.framed
                assert np.array_equal(starts, reference[0])
                assert np.array_equal(marks, reference[1])
                assert (runs is None) == (reference[2] is None)
                if presets == rule.presets:
                    alone = frame(
                        whole, rule, complete=False, max_lines=500, max_bytes=1 << 20, filled=True
                    )
                    given_judged = frame(
                        whole,
                        rule,
                        complete=False,
                        max_lines=500,
                        max_bytes=1 << 20,
                        filled=True,
                        judged=judged,
                    )
                    assert given_judged == alone
    finally:
        os.close(fd)


def test_should_read_a_read_without_a_whole_line_unjudged_and_raise_as_a_read(
    tmp_path: Path,
) -> None:
    path = tmp_path / "app.log"
    path.write_bytes(b"x" * 5000 + b"\nrest")
    fd = os.open(path, os.O_RDONLY)
    try:
        assert _preset_lines.read_judged((MultilinePreset.JAVA,), fd, 0, 4000, 500, 1 << 20, 2) == (
            bytearray(b"x" * 4000),
            None,
        )
        data, judged = _preset_lines.read_judged(
            (MultilinePreset.JAVA,), fd, 4990, 4000, 500, 1 << 20, 2
        ) or (b"", None)
        assert data == b"x" * 10 + b"\nrest"  # the file ends: less than asked
        assert judged is not None and judged.length == 11 and judged.one_line == (1, 11)
    finally:
        os.close(fd)
    with pytest.raises(OSError):
        _preset_lines.read_judged((MultilinePreset.JAVA,), fd, 0, 10, 500, 1 << 20, 2)
