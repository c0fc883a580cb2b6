"""Container logs: a real program's output, copied into a log file as a container runtime copies
it (``tests.support.container_runtime``: CRI or Docker's ``json-file``, stdout and stderr by
threads of their own, lines over 16 KiB in partial entries), read while it is written.

Every record the program logged is read once: a line written in parts as one event, a
traceback (``multiline`` ``python``) as one event, with its stream and the runtime's time.
"""

from __future__ import annotations

import os
import shlex
import sys
import time
from pathlib import Path

import pytest

from pipeline_core.config import MultilineConfig, MultilinePreset, SourceFormat
from pipeline_core.sinks import DeliveryBatch
from pipeline_core.source import (
    Chunk,
    ContainerEvent,
    ContainerLogFormat,
    EventFraming,
    FileWatcher,
    TimeSlicedReader,
    container_event,
)
from pipeline_core.staging_contract import EventCut
from pipeline_core.testing import Received, reader_of, source_of
from tests.support.container_runtime import Container, cri_entry, docker_entry, run_container
from tests.support.log_programs import PYTHON_FORMATS, PYTHON_PROGRAM, read_truth

FORMATS = [SourceFormat.CRI, SourceFormat.DOCKER_JSON]


def _logger(stream: str, truth: Path, *, seed: int, events: int, long: float) -> list[str]:
    return [
        sys.executable, str(PYTHON_PROGRAM), "--log", f"/dev/{stream}", "--truth", str(truth),
        "--format", PYTHON_FORMATS["common"], "--events", str(events), "--rate", "400",
        "--tracebacks", "0.15", "--long", str(long), "--seed", str(seed),
    ]  # fmt: skip


def _collect_while_running(
    container: Container, watcher: FileWatcher, reader: TimeSlicedReader, received: Received
) -> None:
    """Read as a tailing collector does while the program runs, then what is left (the file
    is quiet: its last event is handed on)."""
    while container.process.poll() is None:
        watcher.scan()
        reader.read_slice(received.publish)
        time.sleep(0.003)
    container.wait()
    watcher.scan()
    while not reader.read_slice(received.publish, flush=True).caught_up:
        pass


def _events(received: Received, fmt: SourceFormat) -> list[tuple[ContainerEvent, EventCut | None]]:
    """Every event read, as the program printed it, and its cut."""
    runtime = ContainerLogFormat(fmt.value)
    return [
        (container_event(event.line, runtime), event.cut)
        for event in DeliveryBatch(tuple(received), 0).events()
    ]


@pytest.mark.timeout(180)
@pytest.mark.parametrize("fmt", FORMATS)
def test_should_read_each_record_of_one_stream_once_whole_partial_lines_joined(
    tmp_path: Path, fmt: SourceFormat
) -> None:
    log, truth = tmp_path / "logs" / "0.log", tmp_path / "truth.jsonl"
    log.parent.mkdir()
    log.touch()
    multiline = MultilineConfig(preset=MultilinePreset.PYTHON, flush_after_s=0.2)
    watcher = FileWatcher([source_of(log.parent, "*.log", multiline=multiline, fmt=fmt)], "h", 1024)
    try:
        watcher.scan()
        reader, received = reader_of(watcher, chunk_bytes=64 * 1024), Received()
        container = run_container(
            _logger("stderr", truth, seed=3, events=600, long=0.05), log, fmt.value
        )
        _collect_while_running(container, watcher, reader, received)
    finally:
        watcher.close()

    written = [record.rstrip(b"\n") for record in read_truth(truth)]
    events = _events(received, fmt)
    assert container.partial_entries > 0  # long lines were written in parts
    assert [event.text for event, _ in events] == written
    assert {event.stream for event, _ in events} == {"stderr"}
    assert all(cut is None for _, cut in events)
    assert all(event.time and event.time.endswith("Z") for event, _ in events)


@pytest.mark.timeout(180)
@pytest.mark.parametrize("fmt", FORMATS)
def test_should_read_each_record_of_both_streams_once_whole_though_their_entries_interleave(
    tmp_path: Path, fmt: SourceFormat
) -> None:
    """Run until some event was written with the other stream's entries between its lines
    (the copiers' threads decide that, as goroutines do: three runs at most)."""
    interleaved = False
    for attempt in range(3):
        run = tmp_path / f"run-{attempt}"
        log, truths = run / "logs" / "0.log", {"stdout": run / "out", "stderr": run / "err"}
        log.parent.mkdir(parents=True)
        log.touch()
        multiline = MultilineConfig(preset=MultilinePreset.PYTHON, flush_after_s=0.2)
        watcher = FileWatcher(
            [source_of(log.parent, "*.log", multiline=multiline, fmt=fmt)], "h", 1024
        )
        both = " & ".join(
            shlex.join(_logger(stream, truths[stream], seed=seed, events=600, long=long))
            for stream, seed, long in (("stdout", 1 + attempt, 0.1), ("stderr", 2, 0.0))
        )
        try:
            watcher.scan()
            reader, received = reader_of(watcher, chunk_bytes=64 * 1024), Received()
            container = run_container(["sh", "-c", f"{both} & wait"], log, fmt.value)
            _collect_while_running(container, watcher, reader, received)
        finally:
            watcher.close()

        events = _events(received, fmt)
        for stream, truth in truths.items():
            written = [record.rstrip(b"\n") for record in read_truth(truth)]
            rows = [(event.text, cut) for event, cut in events if event.stream == stream]
            assert [text for text, _ in rows] == written
            assert all(cut is None for _, cut in rows)
        assert container.entries["stdout"] > 600 and container.entries["stderr"] > 600
        interleaved = any(chunk.events.has_joins for chunk in received)
        if interleaved:
            break
    assert interleaved, "no event had the other stream's entries between its lines"


def _framed(fmt: SourceFormat, entries: list[bytes]) -> tuple[int, list[str]]:
    """Frame a read of ``entries`` as a container source without a multiline rule: the lines
    handed on, and the texts of the events among them."""
    runtime = ContainerLogFormat(fmt.value)
    data = bytearray(b"".join(entries))
    framing = EventFraming.of(None, runtime)
    framed = framing.frame(data, complete=False, filled=False)
    chunk = Chunk("s", "f", 0, data[: framed.length], framed.lines, events=framed.spans)
    events = DeliveryBatch((chunk,), 0).events()
    return framed.lines, [container_event(e.line, runtime).text.decode() for e in events]


@pytest.mark.parametrize("fmt", FORMATS)
def test_should_hand_on_a_whole_line_of_a_quiet_stream_while_the_other_writes(
    fmt: SourceFormat,
) -> None:
    entry = cri_entry if fmt is SourceFormat.CRI else docker_entry
    now = time.time_ns()
    entries = [entry("stdout", False, b"started", now)]
    entries += [entry("stderr", False, b"working %d" % n, now + n * 10**6) for n in range(5)]
    entries += [entry("stderr", True, b"a line still being wr", now + 10**7)]

    lines, texts = _framed(fmt, entries)

    # Without a rule nothing joins a whole line: only the line being written waits.
    assert lines == 6
    assert texts == ["started", *(f"working {n}" for n in range(5))]


@pytest.mark.parametrize(
    "line",
    [
        b'{"log":"\\ud800\\n","stream":"stdout","time":"2026-11-28T10:00:00Z"}\n',
        b'{"log":"two\\nlines\\n","stream":"stdout","time":"2026-11-28T10:00:00Z"}\n',
        b'{"log":"no stream\\n","time":"2026-11-28T10:00:00Z"}\n',
        b'{"log":5,"stream":"stdout","time":"2026-11-28T10:00:00Z"}\n',
        b"[1, 2]\n",
    ],
)
def test_should_take_a_line_docker_did_not_write_as_a_line_of_its_own(line: bytes) -> None:
    now = time.time_ns()
    entries = [
        docker_entry("stderr", True, b"head ", now),
        line,
        docker_entry("stderr", False, b"tail", now + 1000),
        docker_entry("stdout", False, b"next", now + 2000),
    ]

    lines, texts = _framed(SourceFormat.DOCKER_JSON, entries)

    assert lines == 4
    assert texts[0] == "head tail"  # the stream's partial line joined across it
    assert len(texts) == 3


@pytest.mark.parametrize("flush", [True, False], ids=["one-shot", "quiet-file"])
def test_should_hand_on_a_held_event_far_from_the_files_end_once_the_file_is_quiet(
    tmp_path: Path, flush: bool
) -> None:
    # stdout's traceback begins, then stderr writes more than a read holds, and the file stops
    # growing: the held event lies a whole read before the end (a read grows to reach it).
    now = time.time_ns()
    entries = [cri_entry("stdout", False, b"2026-11-28 12:00:00,000 ERROR app: failed", now)]
    entries.append(cri_entry("stdout", False, b"Traceback (most recent call last):", now + 1))
    entries += [
        cri_entry("stderr", False, b"2026-11-28 12:00:00,001 INFO w: %06d " % n + b"x" * 200, now)
        for n in range(1500)
    ]
    log = tmp_path / "logs" / "0.log"
    log.parent.mkdir()
    log.write_bytes(b"".join(entries))
    if not flush:
        os.utime(log, (time.time() - 60, time.time() - 60))  # quiet for a minute
    multiline = MultilineConfig(preset=MultilinePreset.PYTHON, flush_after_s=1)
    source = source_of(log.parent, "*.log", multiline=multiline, fmt=SourceFormat.CRI)
    watcher = FileWatcher([source], "h", 1024)
    try:
        watcher.scan()
        reader, received = reader_of(watcher, chunk_bytes=64 * 1024), Received()
        while not reader.read_slice(received.publish, flush=flush).caught_up:
            pass
    finally:
        watcher.close()

    events = _events(received, SourceFormat.CRI)
    assert len(events) == 1501
    assert events[0][0].text.endswith(b"failed\nTraceback (most recent call last):")
