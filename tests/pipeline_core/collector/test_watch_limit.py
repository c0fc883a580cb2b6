"""At the inotify watch limit: the folders beyond it are polled, the others still wake reading at
once, every line is read once, and the log says so once.

The limit is real: the collector runs in a child process in a user namespace of its own
(``tests.support.namespaces``), whose ``/proc/sys/user/max_inotify_watches`` it lowers for
itself alone (the host's ``fs.inotify.max_user_watches`` is not touched). Skipped where user
namespaces cannot be made.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path
from typing import Any

import pytest

from tests.support.namespaces import ChildWarnings, namespaces_work, run_in_namespaces

FOLDERS = "abcdef"
LIMIT = 4
"""Watches the child may hold: the logs folder (new subfolders) and three of the six."""
POLLED = 5.0
"""A line in a folder not watched is read by the 0.2 s poll: far sooner than this, and than
the 30 s the periodic looks are set to here."""
TYPICAL = 0.6
"""The median of the lines' delays, watched and polled: each wake-up reads every file (when
one wake read one file, a line waited about a second for its turn among six)."""


@pytest.mark.timeout(120)
@pytest.mark.skipif(not namespaces_work(), reason="needs a user namespace of its own")
def test_should_poll_the_folders_beyond_the_watch_limit_and_say_it_once(tmp_path: Path) -> None:
    result = run_in_namespaces(
        "tests.pipeline_core.collector.test_watch_limit", str(tmp_path), timeout=100
    )

    assert result["watches"] == LIMIT  # the limit was reached: some folders are not watched
    assert len(result["warnings"]) == 1, result["warnings"]
    assert "max_user_watches" in result["warnings"][0]
    assert max(result["elapsed"].values()) < POLLED, result["elapsed"]
    assert statistics.median(result["elapsed"].values()) < TYPICAL, result["elapsed"]
    assert sorted(result["staged"]) == sorted(result["written"])


# -- the child ---------------------------------------------------------------------------------


def _inotify_watches() -> int:
    count = 0
    for entry in os.listdir("/proc/self/fdinfo"):
        try:
            text = Path(f"/proc/self/fdinfo/{entry}").read_text()
        except OSError:
            continue
        count += sum(1 for line in text.splitlines() if line.startswith("inotify wd:"))
    return count


def child(folder: Path) -> dict[str, Any]:
    """Run in the namespace: lower the limit, tail six folders, write to each, report."""
    from pipeline_core.collector import Collector
    from pipeline_core.metastore import Metastore
    from pipeline_core.testing import RecordingSink, append, staged_payloads, wait_until
    from tests.pipeline_core.collector.support import Tailing, delivered, with_stub_group

    Path("/proc/sys/user/max_inotify_watches").write_text(str(LIMIT))
    warnings = ChildWarnings.install("pipeline_core.source")
    metastore_url = f"sqlite:///{folder / 'sluice.db'}"
    config = with_stub_group(
        folder,
        metastore_url,
        pattern="logs/*/app.log",
        collector={"discovery_interval_s": 30.0, "file_events_fallback_s": 30.0},
    )
    written: list[bytes] = []
    for name in FOLDERS:
        line = f"{name} first".encode()
        written.append(line)
        append(folder / "logs" / name / "app.log", line)
    metastore = Metastore.open(metastore_url)
    sink = RecordingSink("stub")
    collector = Collector(config, metastore, sinks={"stub": sink})
    tailing = Tailing(collector.run, collector.stop)
    elapsed: dict[str, float] = {}
    try:
        wait_until(lambda: set(written) <= set(delivered(sink)), 30)
        watches = _inotify_watches()
        for round_ in range(3):
            for name in FOLDERS:
                time.sleep(0.3)  # caught up: reading waits (an event, or the 0.2 s poll)
                line = f"{name} line {round_}".encode()
                written.append(line)
                started = time.monotonic()
                append(folder / "logs" / name / "app.log", line)
                wait_until(lambda line=line: line in delivered(sink), 30)  # type: ignore[misc]
                elapsed[f"{name}{round_}"] = time.monotonic() - started
    finally:
        tailing.stop()
        metastore.close()
    return {
        "watches": watches,
        "warnings": warnings.messages,
        "elapsed": elapsed,
        "written": [line.decode() for line in written],
        "staged": [line.decode() for line in staged_payloads(config)],
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("folder", type=Path)
    print(json.dumps(child(parser.parse_args().folder)))
