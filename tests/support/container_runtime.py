"""A container runtime's logging, around a real program: its stdout and stderr are copied into
a log file as containerd (CRI) or Docker's ``json-file`` driver copies them.

No container runtime runs where the tests run (it needs root and the kernel's namespaces), so
this reproduces the part of one that makes a container's log what it is, as the runtimes'
sources do it:

- each stream is copied by a thread of its own (containerd's ``redirectLogs``, Docker's
  ``Copier``), so stdout's and stderr's entries interleave in the file as they come;
- a line is read into a 16 KiB buffer: a longer one is written as several entries, all but the
  last partial (CRI tag ``P``; a Docker ``log`` without its ``\\n``), the last one full;
- each entry is one write of the file, under a lock shared by the streams, with the time it
  was read (RFC 3339 with nanoseconds, trailing zeros dropped, as Go's ``RFC3339Nano``).

The program itself (Python's ``logging``, a PySpark job) is real and writes what it writes.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

ENTRY_BYTES = 16 * 1024
"""containerd's and Docker's line buffer: a longer line is written in parts."""


def rfc3339_nano(nanoseconds: int) -> str:
    """Go's ``time.RFC3339Nano`` of a UTC time: ``2026-11-28T13:00:00.1234Z``."""
    seconds, fraction = divmod(nanoseconds, 10**9)
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds))
    digits = f"{fraction:09d}".rstrip("0")
    return f"{stamp}.{digits}Z" if digits else f"{stamp}Z"


def cri_entry(stream: str, partial: bool, text: bytes, nanoseconds: int) -> bytes:
    """One CRI log entry: ``<time> <stream> <P|F> <text>\\n``."""
    tag = b"P" if partial else b"F"
    return b"%s %s %s %s\n" % (rfc3339_nano(nanoseconds).encode(), stream.encode(), tag, text)


def docker_entry(stream: str, partial: bool, text: bytes, nanoseconds: int) -> bytes:
    """One Docker ``json-file`` entry (Go's JSON: ``<``, ``>``, ``&`` escaped)."""
    log = text.decode("utf-8", "replace") + ("" if partial else "\n")
    entry = {"log": log, "stream": stream, "time": rfc3339_nano(nanoseconds)}
    encoded = json.dumps(entry, ensure_ascii=False, separators=(",", ":"))
    for raw, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026")):
        encoded = encoded.replace(raw, escaped)
    return encoded.encode() + b"\n"


_ENTRIES = {"cri": cri_entry, "docker_json": docker_entry}


@dataclass
class Container:
    """A program running under the runtime's logging (:func:`run_container`)."""

    process: subprocess.Popen[bytes]
    log: Path
    copiers: list[threading.Thread] = field(default_factory=list)
    entries: dict[str, int] = field(default_factory=lambda: {"stdout": 0, "stderr": 0})
    partial_entries: int = 0

    def wait(self, timeout: float = 300.0) -> int:
        """Wait for the program to end and its output to be copied; returns its status."""
        status = self.process.wait(timeout)
        for copier in self.copiers:
            copier.join(timeout)
        return status


def run_container(command: Sequence[str], log: Path, fmt: str) -> Container:
    """Start ``command`` with its stdout and stderr copied into ``log`` (appended to) in
    ``fmt`` (``cri`` or ``docker_json``)."""
    entry_of = _ENTRIES[fmt]
    process = subprocess.Popen(
        list(command), stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL
    )
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    lock = threading.Lock()
    container = Container(process, log)
    remaining = [2]

    def copy(name: str, pipe: object) -> None:
        reader = pipe  # a BufferedReader: readline(n) stops at n bytes, as Go's ReadLine
        try:
            while line := reader.readline(ENTRY_BYTES):  # type: ignore[attr-defined]
                partial = not line.endswith(b"\n")
                entry = entry_of(name, partial, line.rstrip(b"\n"), time.time_ns())
                with lock:
                    os.write(fd, entry)
                    container.entries[name] += 1
                    container.partial_entries += partial
                time.sleep(0)  # the other stream's copier may write next, as a goroutine may
        finally:
            with lock:
                remaining[0] -= 1
                if not remaining[0]:
                    os.close(fd)

    for name, pipe in (("stdout", process.stdout), ("stderr", process.stderr)):
        copier = threading.Thread(target=copy, args=(name, pipe), name=f"copy-{name}")
        copier.start()
        container.copiers.append(copier)
    return container
