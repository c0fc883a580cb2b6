"""An application writing a log at a steady pace while it is rotated under it, both ways
logrotate does it, for tests that collect while lines are still being written."""

from __future__ import annotations

import json
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from pipeline_core.testing._lines import UniqueAccessLines


@dataclass(frozen=True)
class WriterReport:
    """What :func:`write_logs` wrote: lines ``0 .. lines - 1`` of its seed."""

    lines: int
    bytes: int
    rotations: list[str]
    """How each rotation was done (``rename to access.log.1``, ``copytruncate to ...``)."""

    @classmethod
    def read(cls, path: Path) -> WriterReport:
        """The report :func:`write_logs` left at ``path``."""
        document = json.loads(path.read_text())
        return cls(int(document["lines"]), int(document["bytes"]), list(document["rotations"]))


def write_logs(
    folder: Path, *, seed: int, total_bytes: int, seconds: float, rotations: int, done: Path
) -> WriterReport:
    """Append the lines of :class:`~pipeline_core.testing.UniqueAccessLines` of ``seed`` to
    ``folder/access.log`` until ``total_bytes``, spread over about ``seconds``, rotating it
    ``rotations`` times (rename first, then copytruncate, in turn); the report is also written
    to ``done`` (atomically: its presence means the writer finished).

    A rename rotation is logrotate's ``create``: the file is renamed to ``access.log.K``, a new
    empty ``access.log`` is created, and the writer still appends one burst to the renamed file
    before it reopens (as nginx does until it gets its USR1). A copytruncate copies the file to
    ``access.log.K`` and truncates it; the writer's descriptor (``O_APPEND``) goes on at 0.
    Nothing is written between the copy and the truncation, so no line is lost by the writer.
    """
    folder.mkdir(parents=True, exist_ok=True)
    live = folder / "access.log"
    lines = UniqueAccessLines(seed)
    burst = 1500
    rotate_every = max(1, total_bytes // (rotations + 1))
    handle = open(live, "ab")  # noqa: SIM115 - reopened at every rename rotation
    started = time.monotonic()
    written = number = since_rotation = 0
    done_rotations: list[str] = []
    try:
        while written < total_bytes:
            block = lines.block(number, burst)
            handle.write(block)
            handle.flush()
            number += burst
            written += len(block)
            since_rotation += len(block)
            if since_rotation >= rotate_every and len(done_rotations) < rotations:
                since_rotation = 0
                target = folder / f"access.log.{len(done_rotations) + 1}"
                if len(done_rotations) % 2 == 0:
                    os.rename(live, target)
                    live.touch()
                    late = lines.block(number, burst // 4)  # before the writer reopens
                    handle.write(late)
                    handle.close()
                    number += burst // 4
                    written += len(late)
                    handle = open(live, "ab")  # noqa: SIM115
                    done_rotations.append(f"rename to {target.name}")
                else:
                    shutil.copyfile(live, target)
                    os.truncate(live, 0)
                    done_rotations.append(f"copytruncate to {target.name}")
            ahead = started + seconds * written / total_bytes - time.monotonic()
            if ahead > 0:
                time.sleep(ahead)
    finally:
        handle.close()
    report = WriterReport(number, written, done_rotations)
    temporary = done.with_name(f".{done.name}.tmp")
    temporary.write_text(json.dumps(report.__dict__))
    os.replace(temporary, done)
    return report
