"""The collector end to end (files -> sealed staging batches), without Spark."""

from __future__ import annotations

import os
import shutil
import threading
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from pipeline_core.collector import Collector
from pipeline_core.config import PipelineConfig
from pipeline_core.errors import CollectorBusyError, SealError
from pipeline_core.mailbox import ReportedThrowableError
from pipeline_core.metastore import CheckpointState, Metastore
from pipeline_core.metastore._schema import files, leases
from pipeline_core.sinks import Barrier, HandoffWriter
from pipeline_core.source import FileState
from pipeline_core.testing import append, lines, staged_lines, staged_payloads, wait_until
from tests.pipeline_core.collector.support import Tailing
from tests.support.pipelines import load


def collect_once(config: PipelineConfig, metastore: Metastore) -> list[int]:
    result = Collector(config, metastore).run_once()
    return [s.checkpoint_id for s in result.sealed]


@pytest.fixture
def config(tmp_path: Path, metastore_url: str) -> PipelineConfig:
    return load(tmp_path, metastore_url)


@pytest.fixture
def logs(tmp_path: Path) -> Path:
    return tmp_path / "logs"


@pytest.mark.timeout(60)
def test_should_seal_every_line_of_every_file_once(
    config: PipelineConfig, metastore: Metastore, logs: Path
) -> None:
    append(logs / "access.log", *lines("a", 500))
    append(logs / "access.log.1", *lines("b", 300))

    sealed = collect_once(config, metastore)

    assert len(sealed) == 1
    assert sorted(staged_payloads(config)) == sorted(lines("a", 500) + lines("b", 300))
    checkpoint = metastore.checkpoint(sealed[0])
    assert checkpoint.state is CheckpointState.SEALED
    (batch,) = metastore.batches(sealed[0])
    assert batch.line_count == 800
    assert (
        batch.byte_count
        == (logs / "access.log").stat().st_size + (logs / "access.log.1").stat().st_size
    )


@pytest.mark.timeout(60)
def test_should_pick_up_only_new_lines_on_the_next_run(
    config: PipelineConfig, metastore: Metastore, logs: Path
) -> None:
    append(logs / "access.log", *lines("first", 100))
    first = collect_once(config, metastore)
    append(logs / "access.log", *lines("second", 50))

    second = collect_once(config, metastore)
    third = collect_once(config, metastore)

    by_checkpoint: dict[int, list[bytes]] = {}
    for staged in staged_lines(config):
        by_checkpoint.setdefault(staged.checkpoint_id, []).append(staged.line)
    assert by_checkpoint[first[0]] == lines("first", 100)
    assert by_checkpoint[second[0]] == lines("second", 50)
    assert third[0] not in by_checkpoint  # an empty checkpoint seals an empty batch
    assert metastore.batches(third[0])[0].line_count == 0


@pytest.mark.timeout(60)
def test_should_keep_a_partial_last_line_until_its_newline_arrives(
    config: PipelineConfig, metastore: Metastore, logs: Path
) -> None:
    append(logs / "access.log", b"whole\nhalf-", newline=False)
    collect_once(config, metastore)
    assert staged_payloads(config) == [b"whole"]

    append(logs / "access.log", b"done")
    collect_once(config, metastore)

    staged = staged_lines(config)
    assert [s.line for s in staged] == [b"whole", b"half-done"]
    assert [s.offset for s in staged] == [0, 6]


@pytest.mark.timeout(60)
def test_should_lose_nothing_across_rename_rotation(
    config: PipelineConfig, metastore: Metastore, logs: Path
) -> None:
    append(logs / "access.log", *lines("before", 200))
    collect_once(config, metastore)
    append(logs / "access.log", *lines("unread-at-rotation", 40))
    os.rename(logs / "access.log", logs / "access.log.1")
    append(logs / "access.log", *lines("after", 70))

    collect_once(config, metastore)

    expected = lines("before", 200) + lines("unread-at-rotation", 40) + lines("after", 70)
    assert sorted(staged_payloads(config)) == sorted(expected)
    assert len({(s.fingerprint, s.offset) for s in staged_lines(config)}) == len(expected)


@pytest.mark.timeout(60)
def test_should_find_a_file_renamed_out_of_the_paths_after_a_restart(
    tmp_path: Path, metastore_url: str, metastore: Metastore, logs: Path
) -> None:
    config = load(tmp_path, metastore_url, pattern="logs/access.log")
    append(logs / "access.log", *lines("before", 10))
    collect_once(config, metastore)
    append(logs / "access.log", *lines("tail", 5))
    os.rename(logs / "access.log", logs / "old-access.log")
    append(logs / "access.log", *lines("new", 3))

    collect_once(config, metastore)

    assert sorted(staged_payloads(config)) == sorted(
        lines("before", 10) + lines("tail", 5) + lines("new", 3)
    )


@pytest.mark.timeout(60)
@pytest.mark.parametrize("copy_on_paths", [True, False], ids=["copy-globbed", "copy-outside"])
def test_should_lose_nothing_across_copytruncate_rotation(
    tmp_path: Path, metastore_url: str, metastore: Metastore, logs: Path, copy_on_paths: bool
) -> None:
    pattern = "logs/access.log*" if copy_on_paths else "logs/access.log"
    config = load(tmp_path, metastore_url, pattern=pattern)
    append(logs / "access.log", *lines("before", 200))
    collect_once(config, metastore)
    append(logs / "access.log", *lines("unread-at-copy", 40))
    shutil.copyfile(logs / "access.log", logs / "access.log.1")
    with open(logs / "access.log", "r+b") as handle:
        handle.truncate(0)
    append(logs / "access.log", *lines("after", 70))

    collect_once(config, metastore)

    expected = lines("before", 200) + lines("unread-at-copy", 40) + lines("after", 70)
    assert sorted(staged_payloads(config)) == sorted(expected)


@pytest.mark.timeout(60)
def test_should_stage_a_huge_line_as_its_prefix_and_keep_binary_bytes_exactly(
    tmp_path: Path, metastore_url: str, metastore: Metastore, logs: Path
) -> None:
    config = load(
        tmp_path, metastore_url, collector={"max_line_bytes": 4096, "read_chunk_bytes": 4096}
    )
    huge = b"h" * 10_000
    odd = [b"\xff\xfe invalid utf-8", b"nul\x00byte", b"", b"ok"]
    append(logs / "access.log", b"first", huge, *odd)

    collect_once(config, metastore)

    staged = staged_lines(config)
    assert staged[0].line == b"first"
    assert (staged[1].offset, staged[1].line, staged[1].line_bytes) == (6, b"h" * 1024, 10_000)
    assert [s.line for s in staged[2:]] == odd
    assert staged[2].offset == 6 + 10_001
    assert [s.line_bytes for s in staged if s is not staged[1]] == [None] * 5


@pytest.mark.timeout(60)
def test_should_refuse_to_run_while_another_collector_holds_the_lease(
    config: PipelineConfig, metastore: Metastore, logs: Path
) -> None:
    append(logs / "access.log", *lines("a", 3))
    assert metastore.acquire_lease(config.name, config.collector.host, "someone-else", 60)

    with pytest.raises(CollectorBusyError, match="someone-else"):
        Collector(config, metastore).run_once()
    assert staged_payloads(config) == []


@pytest.mark.timeout(90)
def test_should_seal_requested_checkpoints_while_tailing_and_seal_on_stop(
    config: PipelineConfig, metastore: Metastore, logs: Path
) -> None:
    append(logs / "access.log", *lines("a", 100))
    collector = Collector(config, metastore)
    outcome: list[object] = []

    def run() -> None:
        try:
            outcome.append(collector.run())
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    try:
        # A checkpoint holds what was read before its barrier: request it once the first
        # lines are read, or a loaded machine seals it empty.
        wait_until(lambda: any(m.lines_read >= 100 for m in collector.metrics()))
        requested = metastore.request_checkpoint(config.name, "run-1").checkpoint_id
        wait_until(lambda: metastore.checkpoint(requested).state is CheckpointState.SEALED)
        append(logs / "access.log", *lines("b", 30))
        os.rename(logs / "access.log", logs / "access.log.1")
        append(logs / "access.log", *lines("c", 20))
        wait_until(lambda: len(metastore.files(config.name, config.collector.host)) >= 1)
        # A stop seals what was read: wait until the lines written are (not for a fixed time).
        wait_until(lambda: collector.metrics()[0].lines_read >= 150)
    finally:
        collector.stop()
        thread.join(timeout=30)
    assert not thread.is_alive()
    assert not isinstance(outcome[0], BaseException), outcome
    assert sorted(staged_payloads(config)) == sorted(
        lines("a", 100) + lines("b", 30) + lines("c", 20)
    )
    first = [s.line for s in staged_lines(config) if s.checkpoint_id == requested]
    assert first == lines("a", 100)
    assert metastore.lease_holder(config.name, config.collector.host) is None


@pytest.mark.timeout(60)
def test_should_read_again_what_a_failed_seal_left_unrecorded(
    config: PipelineConfig, metastore: Metastore, logs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    append(logs / "access.log", *lines("a", 120))
    collect_once(config, metastore)
    append(logs / "access.log", *lines("b", 80))

    def disk_full(self: HandoffWriter, barrier: Barrier) -> None:
        raise SealError("No space left on device")

    with monkeypatch.context() as patch:
        patch.setattr(HandoffWriter, "seal", disk_full)
        with pytest.raises(ReportedThrowableError) as failure:
            Collector(config, metastore).run_once()
    assert isinstance(failure.value.__cause__, SealError)
    assert metastore.lease_holder(config.name, config.collector.host) is None

    (retried,) = collect_once(config, metastore)

    assert sorted(staged_payloads(config)) == sorted(lines("a", 120) + lines("b", 80))
    assert [s.line for s in staged_lines(config) if s.checkpoint_id == retried] == lines("b", 80)


@pytest.mark.timeout(60)
def test_should_stop_reading_when_another_collector_takes_over_its_lease(
    tmp_path: Path, metastore_url: str, metastore: Metastore, logs: Path
) -> None:
    config = load(tmp_path, metastore_url, collector={"lease_seconds": 1.5})
    append(logs / "access.log", *lines("a", 10))
    collector = Collector(config, metastore)
    outcome: list[BaseException] = []

    def run() -> None:
        try:
            collector.run()
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    wait_until(lambda: metastore.lease_holder(config.name, config.collector.host) is not None)
    with metastore.transaction() as connection:
        connection.execute(
            leases.update().values(
                holder="another-host-process",
                expires_at=datetime.now(timezone.utc) + timedelta(hours=1),
            )
        )
    thread.join(timeout=30)

    assert not thread.is_alive()
    assert isinstance(outcome[0], ReportedThrowableError)
    assert isinstance(outcome[0].__cause__, CollectorBusyError)


@pytest.mark.timeout(60)
def test_should_release_its_lease_only_once_the_lease_renewals_have_stopped(
    tmp_path: Path, metastore_url: str, metastore: Metastore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A renewal takes the lease (it inserts the row a release deleted): one racing the release
    left an ended collector holding the lease, and the next collector of the process was
    refused (seen in the copytruncate fault test on a loaded machine). Here the collector is
    stopped while a renewal waits on the metastore."""
    config = load(tmp_path, metastore_url, collector={"lease_seconds": 1.5})  # renews every 0.5 s
    append(tmp_path / "logs" / "access.log", *lines("a", 50))
    renewal_waiting = threading.Event()
    renew = Metastore.acquire_leases

    def slow_renewal(self: Metastore, *args: Any, **kwargs: Any) -> list[bool]:
        if threading.current_thread().name == "sluice-control":
            renewal_waiting.set()
            time.sleep(1.0)  # a metastore busy with other writers
        return renew(self, *args, **kwargs)

    monkeypatch.setattr(Metastore, "acquire_leases", slow_renewal)
    collector = Collector(config, metastore)
    thread = threading.Thread(target=collector.run, daemon=True)
    thread.start()
    try:
        wait_until(lambda: collector.metrics()[0].lines_read >= 50)
        assert renewal_waiting.wait(timeout=10)
    finally:
        collector.stop()
        thread.join(timeout=30)

    assert not thread.is_alive()
    assert metastore.lease_holder(config.name, config.collector.host) is None
    collect_once(config, metastore)  # the next collector of this process gets the lease


@pytest.mark.timeout(60)
def test_should_record_only_the_files_that_moved_at_a_checkpoint(
    config: PipelineConfig, metastore: Metastore, logs: Path, metastore_url: str
) -> None:
    for name in ("access.log", "access.log.1", "access.log.2"):
        append(logs / name, *lines(name, 10))
    collector = Collector(config, metastore)
    tailing = Tailing(collector.run, collector.stop)
    engine = sa.create_engine(metastore_url)

    def updated() -> dict[str, datetime]:
        with engine.connect() as connection:
            rows = connection.execute(sa.select(files.c.path, files.c.updated_at))
            return {Path(row.path).name: row.updated_at for row in rows}

    def checkpoint(run: str) -> None:
        requested = metastore.request_checkpoint(config.name, run).checkpoint_id
        wait_until(lambda: metastore.checkpoint(requested).state is CheckpointState.SEALED)

    try:
        wait_until(lambda: sum(m.lines_read for m in collector.metrics()) >= 30)
        checkpoint("run-1")
        first = updated()
        append(logs / "access.log", *lines("more", 5))
        wait_until(lambda: sum(m.lines_read for m in collector.metrics()) >= 35)
        checkpoint("run-2")
        second = updated()
    finally:
        tailing.stop()
        engine.dispose()

    assert sorted(first) == ["access.log", "access.log.1", "access.log.2"]
    changed = sorted(name for name in first if second[name] != first[name])
    assert changed == ["access.log"]


@pytest.mark.timeout(60)
def test_should_forget_a_file_gone_and_sealed_to_its_end_after_a_while(
    tmp_path: Path, metastore_url: str, metastore: Metastore, logs: Path
) -> None:
    """Rotation to dated names makes a new file every day: each kept a row and a tracked file
    for ever. One gone from the disk, read and sealed to its end, is forgotten after
    ``forget_done_files_after_h``, by a one-shot run as by a tailing one."""
    config = load(tmp_path, metastore_url, collector={"forget_done_files_after_h": 0.5 / 3600})
    host = config.collector.host
    append(logs / "access.log-20261127", *lines("a", 10))
    append(logs / "access.log", *lines("b", 10))
    collect_once(config, metastore)
    os.unlink(logs / "access.log-20261127")  # logrotate's maxage
    append(logs / "access.log", *lines("c", 5))

    collect_once(config, metastore)
    states = {os.path.basename(r.path): r.state for r in metastore.files(config.name, host)}
    assert states == {"access.log-20261127": FileState.DONE, "access.log": FileState.LIVE}
    time.sleep(0.6)
    append(logs / "access.log", *lines("d", 5))
    collect_once(config, metastore)

    assert [r.path for r in metastore.files(config.name, host)] == [str(logs / "access.log")]
    expected = lines("a", 10) + lines("b", 10) + lines("c", 5) + lines("d", 5)
    assert sorted(staged_payloads(config)) == sorted(expected)
