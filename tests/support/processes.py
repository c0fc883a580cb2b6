"""Processes a test starts: each in a process group of its own (``start_new_session=True``), so
that the group, children included, can be stopped whatever happened."""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

_LOWEST_PORT = 10_000


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listened on a moment ago, below the kernel's
    ephemeral range: a port the kernel hands out to ``bind(0)`` could be given, between this
    call and the server's bind, to another socket of the same server (Spark Connect's block
    manager took the port chosen for its gRPC service so, and the server could not start)."""
    low = _ephemeral_ports()[0]
    for _ in range(100):
        port = random.randrange(_LOWEST_PORT, low) if low > _LOWEST_PORT + 100 else 0
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue  # in use: another
            return int(probe.getsockname()[1])
    raise RuntimeError("no free TCP port below the ephemeral range")


def _ephemeral_ports() -> tuple[int, int]:
    """The kernel's range of ports for ``bind(0)`` (Linux's default when unknown)."""
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return int(low), int(high)
    except (OSError, ValueError):
        return 32768, 60999


def group_alive(pgid: int) -> bool:
    """Whether any process of group ``pgid`` is still there."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def stop_group(
    process: subprocess.Popen[bytes], first: signal.Signals, timeout: float
) -> int | None:
    """Send ``first`` to the group ``process`` leads, give the group ``timeout`` seconds to
    end, then SIGKILL whatever is left of it. Returns the leader's exit status (None if it was
    not reaped: it cannot be, once SIGKILLed, unless the kernel has lost it).

    The group's id is the leader's PID: start it with ``start_new_session=True``.
    """
    stop_groups([process], first, timeout)
    return process.returncode


def stop_groups(
    processes: list[subprocess.Popen[bytes]], first: signal.Signals, timeout: float
) -> None:
    """:func:`stop_group` for several groups at once: each gets ``first`` now, all have until
    one shared deadline to end (the whole group, not just its leader), then whatever is left
    of any gets SIGKILL."""
    for process in processes:
        if process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, first)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for process in processes:
            process.poll()  # reap the leader once it has exited
        if not any(group_alive(process.pid) for process in processes):
            break
        time.sleep(0.05)
    for process in processes:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=30)


def find_programs(names: Sequence[str], install_hint: str) -> dict[str, str]:
    """Each program's binary, on PATH or in /usr/sbin and /usr/bin (which a non-root PATH may
    lack); fails the test naming those missing, with ``install_hint``."""
    found = {
        name: shutil.which(name) or shutil.which(name, path="/usr/sbin:/usr/bin") for name in names
    }
    missing = sorted(name for name, path in found.items() if path is None)
    if missing:
        pytest.fail(f"{', '.join(missing)} not found; {install_hint}", pytrace=False)
    return {name: str(path) for name, path in found.items()}
