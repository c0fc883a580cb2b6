"""CollectorSession: a collector run bounded by a deadline or a stop from any thread, sealing
what it read either way."""

from __future__ import annotations

import signal
import threading
import time
from pathlib import Path

import pytest

from pipeline_core.collector import CollectorSession, StopCause
from pipeline_core.metastore import CheckpointState, Metastore
from pipeline_core.testing import append, lines, staged_payloads, wait_until
from tests.support.pipelines import load


@pytest.mark.timeout(60)
def test_should_seal_what_was_read_and_stop_when_the_deadline_comes(
    tmp_path: Path, metastore_url: str, metastore: Metastore
) -> None:
    config = load(tmp_path, metastore_url, pattern=f"{tmp_path}/logs/*.log")
    append(tmp_path / "logs" / "app.log", *lines("app", 500))
    session = CollectorSession([config])

    started = time.monotonic()
    result = session.run(until=started + 1.0)

    assert time.monotonic() - started >= 1.0
    assert session.stopped_by is StopCause.DEADLINE
    assert result.lines == 500
    assert [sealed.lines for sealed in result.sealed] == [500]
    assert sorted(staged_payloads(config)) == lines("app", 500)
    [checkpoint] = metastore.checkpoints(config.name)
    assert checkpoint.state is CheckpointState.SEALED


@pytest.mark.timeout(60)
def test_should_end_at_once_when_stopped_before_the_run(tmp_path: Path, metastore_url: str) -> None:
    config = load(tmp_path, metastore_url, pattern=f"{tmp_path}/logs/*.log")
    append(tmp_path / "logs" / "app.log", *lines("app", 10))
    session = CollectorSession([config])

    session.stop()
    started = time.monotonic()
    result = session.run(until=time.monotonic() + 30)

    assert time.monotonic() - started < 20
    assert session.stopped_by is StopCause.REQUEST
    assert result.lines == 0


@pytest.mark.timeout(60)
def test_should_stop_from_a_signal_handler_and_keep_every_line_read(
    tmp_path: Path, metastore_url: str
) -> None:
    """The handler runs on the mailbox thread itself, between two of its bytecodes: the stop
    must not wait there for anything that thread holds."""
    config = load(tmp_path, metastore_url, pattern=f"{tmp_path}/logs/*.log")
    log = tmp_path / "logs" / "app.log"
    append(log, *lines("first", 300))
    session = CollectorSession([config])
    previous = signal.signal(signal.SIGUSR1, lambda _signum, _frame: session.stop())
    try:

        def write_then_signal() -> None:
            wait_until(lambda: session.collector.metrics()[0].lines_read == 300, timeout=20)
            signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGUSR1)

        threading.Thread(target=write_then_signal, daemon=True).start()
        result = session.run(until=time.monotonic() + 40)
    finally:
        signal.signal(signal.SIGUSR1, previous)

    assert session.stopped_by is StopCause.REQUEST
    assert result.lines == 300
    assert sorted(staged_payloads(config)) == lines("first", 300)
