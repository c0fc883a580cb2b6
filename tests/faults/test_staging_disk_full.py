"""The staging folder's filesystem fills while a collector tails: it waits, loses nothing and
stages nothing twice.

The filesystem is real: the collector runs in a child process that is root of a user and mount
namespace of its own (``tests.support.namespaces``) and mounts a 200 KiB ``tmpfs`` on its data
folder (the staging folder is in it; the metastore is not), then a program appends about
850 KiB of lines. Writing the part files fails with ``ENOSPC``:

* ``room``: the filesystem is grown (``mount -o remount,size=``) while the collector waits; a
  checkpoint is then requested and sealed: every line written is staged, once;
* ``stop``: the collector is stopped while the filesystem is still full; it stops within its
  stop deadline without sealing, and a new run (once the filesystem is grown) stages every line
  once: what was not sealed is read again. The checkpoint the stop requested is sealed as the
  new run starts, with what it read by then; the test's own request waits until it read every
  line (under load, one made at once was sealed with it, at the offsets of the last run).

* ``seal``: every line is staged (in part files, not sealed yet) on a filesystem with room,
  then a file fills it and a checkpoint is requested: the batch's manifest cannot be written.
  The collector keeps its parts and tries the seal again; once the file is removed the
  checkpoint is sealed with every line, once.
* ``seal-stop``: as ``seal``, but the collector is stopped while its seal waits for room: it
  stops within its stop deadline without sealing, and a new run (once the file is removed)
  stages every line once, as after ``stop``.

* ``spool-room``: as ``room``, with the staging in an object store (moto's S3 server): the
  filesystem that fills is the spool's, where batches are sealed before their upload; once it
  is grown every line is stored once.

Each way the collector's log says that the filesystem is full, each time it tries again.
Skipped where the namespaces cannot be made.
"""

from __future__ import annotations

import argparse
import errno
import json
import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.support.namespaces import ChildWarnings, namespaces_work, run_in_namespaces
from tests.support.object_store import S3Bucket

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not namespaces_work(), reason="needs a user and mount namespace"),
    pytest.mark.timeout(300),
]

SPACE = "200k"
GROWN = "20m"
ROUNDS = 40
LINES = 100
"""Appended ``ROUNDS`` times, ``LINES`` lines of about 210 bytes each: about 850 KiB."""
FULL_FOR_S = 6.0


ENDINGS = ["room", "stop", "seal", "seal-stop", "spool-room"]


@pytest.mark.parametrize("ending", [e for e in ENDINGS if not e.startswith("spool")])
def test_a_full_staging_disk_is_waited_out_and_every_line_is_staged_once(
    tmp_path: Path, ending: str
) -> None:
    result = run_in_namespaces(
        "tests.faults.test_staging_disk_full", str(tmp_path), ending, timeout=280
    )
    assert_staged_once(result, ending)


def test_a_full_spool_is_waited_out_and_every_line_is_stored_once(
    tmp_path: Path, s3_bucket: S3Bucket
) -> None:
    result = run_in_namespaces(
        "tests.faults.test_staging_disk_full",
        str(tmp_path),
        "spool-room",
        "--staging",
        s3_bucket.url("staging"),
        timeout=280,
    )
    assert_staged_once(result, "spool-room")


def assert_staged_once(result: dict[str, Any], ending: str) -> None:
    assert result["collector_error"] is None, (
        result["collector_error"],
        result["checkpoints"],
        result["warnings"][-20:],
    )
    assert result["staged"] == result["written"]
    assert result["distinct_staged"] == result["written"]
    assert any("filesystem is full" in message for message in result["warnings"]), result[
        "warnings"
    ][:5]
    if ending in ("stop", "seal-stop"):
        assert result["stop_seconds"] < 40, result["stop_seconds"]
        assert any("stopping without sealing" in m for m in result["warnings"])


# -- the child ---------------------------------------------------------------------------------


def in_parts(data: Path) -> int:
    """Bytes in the unsealed part files under ``data``."""
    return sum(p.stat().st_size for p in data.rglob("_inflight/*/*") if p.is_file())


def fill(folder: Path) -> Path:
    """A file taking every byte the filesystem of ``folder`` has left."""
    filler = folder / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        for size in (1 << 16, 1 << 12, 1):
            try:
                while True:
                    os.write(fd, b"\0" * size)
            except OSError as exc:
                assert exc.errno == errno.ENOSPC, exc
    finally:
        os.close(fd)
    return filler


def child(folder: Path, ending: str, staging: str | None = None) -> dict[str, Any]:
    """Run in the namespaces: mount the small filesystem, tail, fill it, end as ``ending``
    (with ``staging``, an object store's URL, the spool is what fills)."""
    from pipeline_core.collector import Collector
    from pipeline_core.metastore import Metastore
    from pipeline_core.testing import append, staged_payloads, wait_until
    from tests.pipeline_core.collector.support import Tailing
    from tests.support.object_store import recorded_remote_lines
    from tests.support.pipelines import load

    data = folder / "data"
    data.mkdir(parents=True)
    size = GROWN if ending.startswith("seal") else SPACE
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(data)], check=True)
    warnings = ChildWarnings.install()
    metastore_url = f"sqlite:///{folder / 'sluice.db'}"
    if staging is None:
        config = load(folder, metastore_url, pattern="logs/app.log")
        assert config.staging_dir.is_relative_to(data)
    else:
        config = load(folder, metastore_url, pattern="logs/app.log", handoff={"staging": staging})
        assert config.handoff.spool_dir is None  # the default: <data_dir>/spool, on tmpfs

    def staged_lines() -> list[bytes]:
        if staging is None:
            return staged_payloads(config)
        return [line.data for line in recorded_remote_lines(metastore_url, config.name)]

    metastore = Metastore.open(metastore_url)
    written: list[bytes] = []
    error: BaseException | None = None
    stop_seconds = 0.0

    def grow() -> None:
        subprocess.run(["mount", "-o", f"remount,size={GROWN}", str(data)], check=True)

    def staged_all() -> bool:
        return len(staged_lines()) >= len(written)

    def read_all(collector: Collector) -> Callable[[], bool]:
        """Whether ``collector`` read every line written: a checkpoint requested then seals
        them all (one requested earlier seals what was read at its barrier, and a new run
        seals the checkpoints pending at its start before it reads)."""
        log = folder / "logs" / "app.log"
        return lambda: (
            [f.read_offset for m in collector.metrics() for f in m.files] == [log.stat().st_size]
        )

    try:
        collector = Collector(config, metastore)
        tailing = Tailing(collector.run, collector.stop)
        for round_ in range(ROUNDS):
            lines = [f"{round_:03d} {n:03d} ".encode() + b"x" * 200 for n in range(LINES)]
            written += lines
            append(folder / "logs" / "app.log", *lines)
            time.sleep(0.05)
        if ending.startswith("seal"):
            staged_bytes = sum(len(line) + 1 for line in written)
            wait_until(lambda: in_parts(data) >= staged_bytes, 90, "every line in part files")
            filler = fill(data)
            metastore.request_checkpoint(config.name)
            time.sleep(FULL_FOR_S)  # the seal keeps trying
            assert not staged_all(), "sealed on a full filesystem"
            if ending == "seal-stop":
                started = time.monotonic()
                tailing.stop()
                stop_seconds = time.monotonic() - started
                filler.unlink()
                again = Collector(config, metastore)
                tailing = Tailing(again.run, again.stop)
                wait_until(read_all(again), 90, "every line read by the next run")
                metastore.request_checkpoint(config.name)
            else:
                filler.unlink()
            wait_until(staged_all, 90, "every line sealed once there is room")
            tailing.stop()
        elif ending in ("room", "spool-room"):
            time.sleep(FULL_FOR_S)  # the collector keeps trying
            grow()
            wait_until(read_all(collector), 90, "every line read")
            metastore.request_checkpoint(config.name)
            wait_until(staged_all, 90, "every line staged")
            tailing.stop()
        else:
            time.sleep(FULL_FOR_S)  # the collector keeps trying
            started = time.monotonic()
            tailing.stop()
            stop_seconds = time.monotonic() - started
            grow()
            again = Collector(config, metastore)
            tailing = Tailing(again.run, again.stop)
            wait_until(read_all(again), 90, "every line read by the next run")
            metastore.request_checkpoint(config.name)
            wait_until(staged_all, 90, "every line staged by the next run")
            tailing.stop()
    except BaseException as exc:  # reported, not raised: the parent shows it
        error = exc
    finally:
        checkpoints = {
            c.checkpoint_id: (c.state.value, c.error) for c in metastore.checkpoints(config.name)
        }
        metastore.close()
    staged = staged_lines()
    return {
        "collector_error": None if error is None else repr(error),
        "written": len(written),
        "staged": len(staged),
        "distinct_staged": len(set(staged) & set(written)),
        "warnings": warnings.messages,
        "stop_seconds": stop_seconds,
        "checkpoints": checkpoints,
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("folder", type=Path)
    parser.add_argument("ending", choices=ENDINGS)
    parser.add_argument("--staging", default=None)
    arguments = parser.parse_args()
    print(json.dumps(child(arguments.folder, arguments.ending, arguments.staging)))
