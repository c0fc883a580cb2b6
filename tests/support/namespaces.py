"""Running a test's child process in Linux namespaces of its own (``unshare``): a user
namespace in which it is root, so it may lower its own inotify limits or mount a small
``tmpfs`` (with a mount namespace) without touching the host's."""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
from functools import cache
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


@cache
def namespaces_work() -> bool:
    """Whether a user and mount namespace can be made here, with the child root in it (it
    can write its own ``/proc/sys/user/max_inotify_watches`` and mount a ``tmpfs``)."""
    unshare = shutil.which("unshare")
    if unshare is None or not sys.platform.startswith("linux"):
        return False
    probe = subprocess.run(
        [
            unshare,
            "--user",
            "--map-root-user",
            "--mount",
            "sh",
            "-c",
            "echo 1 > /proc/sys/user/max_inotify_watches && mount -t tmpfs -o size=64k tmpfs /tmp",
        ],
        capture_output=True,
        timeout=30,
    )
    return probe.returncode == 0


def run_in_namespaces(module: str, *arguments: str, timeout: float) -> dict[str, Any]:
    """Run ``python -m module arguments`` as root of a user and mount namespace of its own;
    the JSON object it printed last. Fails (AssertionError) with its error output if it
    exited otherwise than with 0."""
    command = ["unshare", "--user", "--map-root-user", "--mount", sys.executable, "-m", module]
    completed = subprocess.run(
        [*command, *arguments],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    result: dict[str, Any] = json.loads(completed.stdout.strip().splitlines()[-1])
    return result


class ChildWarnings(logging.Handler):
    """The warnings a child logs (of loggers under ``prefix``), to report to its parent;
    installed on the root logger by :meth:`install`."""

    def __init__(self, prefix: str = "") -> None:
        super().__init__(logging.WARNING)
        self.prefix = prefix
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.name.startswith(self.prefix):
            self.messages.append(record.getMessage())

    @classmethod
    def install(cls, prefix: str = "") -> ChildWarnings:
        warnings = cls(prefix)
        logging.getLogger().addHandler(warnings)
        return warnings
