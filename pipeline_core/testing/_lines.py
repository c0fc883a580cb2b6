"""Lines to feed a pipeline, and appending them to a log file as an application would.

Every line made here is distinct, so what a pipeline delivered can be compared with what was
written line for line: :func:`lines` and :func:`padded_lines` for plain numbered lines,
:class:`UniqueAccessLines` for realistic nginx lines that still name their number.
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from pipeline_core.testing._access_logs import access_lines

ACCESS_LINES_END = datetime(2026, 1, 1, tzinfo=timezone.utc)
"""Where :class:`UniqueAccessLines` ends its lines' times by default (the same day partitions in
every run)."""
_POOL_SIZE = 4096


def lines(prefix: str, count: int) -> list[bytes]:
    """``count`` distinct lines (no newline) starting with ``prefix``."""
    return [f"{prefix} line {i:05d}".encode() for i in range(count)]


def padded_lines(prefix: str, first: int, count: int, width: int = 40) -> bytes:
    """Lines ``first .. first + count - 1``, each ``prefix``, its number and ``width`` padding
    bytes, newlines included: a block to append at once."""
    return b"".join(
        b"%s %06d %s\n" % (prefix.encode(), n, b"x" * width) for n in range(first, first + count)
    )


def append(path: Path, *lines: bytes, newline: bool = True) -> None:
    """Append ``lines`` to ``path`` (created with its folder if missing), each followed by a
    newline unless ``newline`` is false, in one write."""
    append_bytes(path, b"".join(line + (b"\n" if newline else b"") for line in lines))


def append_bytes(path: Path, data: bytes = b"line\n") -> None:
    """Append ``data`` as it is to ``path`` (created with its folder if missing)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "ab") as handle:
        handle.write(data)


class UniqueAccessLines:
    """Line ``n`` of a seed: a realistic nginx "combined" line (from
    :func:`~pipeline_core.testing.access_lines`, its time within the hour before ``end``) whose
    ``remote_user`` is ``w<n:09d>``, so every line is unique and the lake's rows name the line
    they came from."""

    def __init__(self, seed: int, end: datetime = ACCESS_LINES_END) -> None:
        self._pool = [_split_user(line) for line in access_lines(_POOL_SIZE, seed=seed, end=end)]

    def line(self, number: int) -> bytes:
        head, tail = self._pool[number % _POOL_SIZE]
        return b"%s - w%09d [%s" % (head, number, tail)

    def lines(self, start: int, count: int) -> list[bytes]:
        """Lines ``start .. start + count - 1``, without newlines."""
        return [self.line(n) for n in range(start, start + count)]

    def block(self, start: int, count: int) -> bytes:
        """Lines ``start .. start + count - 1``, each with its ``\\n``."""
        return b"".join(self.line(n) + b"\n" for n in range(start, start + count))


def _split_user(line: bytes) -> tuple[bytes, bytes]:
    address, _, rest = line.partition(b" - ")
    _, _, tail = rest.partition(b" [")
    return address, tail
