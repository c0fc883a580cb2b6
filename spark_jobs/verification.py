"""Part files checked against their manifests on the driver, before the lake changes.

First the sizes of all parts (``stat``, or one listing per batch folder in an object store),
then the content of each part in one sequential read (no Spark job; ranged reads of
``VERIFY_READ_BYTES`` in a store): its CRC-32 and the lines of each of its segments (an
over-long line's segment: one line, its prefix, without a newline). A part that differs fails
the landing, naming the file, with the earlier landing of the checkpoint intact; the executors
count each segment's lines again as they read it (``spark_jobs.staging``).

The check is of physical lines, the manifest's ``lines``, whether or not a segment lists
multiline ``events``: reading the manifest checked that its events lie among those lines
(``pipeline_core.staging_contract``), and the executors check it again as they join the lines
into events. What lands is counted in events (``spark_jobs.checkpoint.staged_events``).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

try:  # zlib-ng's CRC-32 is SIMD (about 20 GB/s) and the same checksum as zlib's
    from zlib_ng.zlib_ng import crc32
except ImportError:  # a driver environment without it: the standard library's
    from zlib import crc32

from pipeline_core.errors import LandingError, StorageError
from pipeline_core.staging_contract import Segment, SegmentKind
from spark_jobs.checkpoint import PartFile
from spark_jobs.part_files import is_local, local_path, open_part, sizes_of
from spark_jobs.segment_split import count_newlines

VERIFY_READ_BYTES = 8 * 1024 * 1024
"""The driver checks part files reading this many bytes at a time (its memory for them)."""
_NEWLINE = 10


class PartRowCountError(LandingError):
    """A part file does not hold what its manifest says: here, a segment holds another number
    of lines. The subclasses name the other ways a part differs."""


class PartSizeError(PartRowCountError):
    """A part file's size differs from its manifest's ``bytes``."""


class PartChecksumError(PartRowCountError):
    """A part file's CRC-32 differs from its manifest's ``crc32``."""


def verify_parts(parts: Sequence[PartFile]) -> list[PartFile]:
    """Check every part file against its manifest, on the driver (no Spark job).

    First the sizes of all parts, then the content of each part, ``VERIFY_READ_BYTES`` at a
    time (a thread per core, each on its own parts): its CRC-32, and the lines of each segment
    (its ``\\n`` bytes, plus one if it does not end with one).

    Returns:
        The non-empty parts.

    Raises:
        PartSizeError: naming every file whose size differs from its manifest.
        PartChecksumError: naming every file whose CRC-32 differs from its manifest.
        PartRowCountError: naming every segment whose lines differ from its manifest.
    """
    sizes = _sizes(parts)
    _fail(
        PartSizeError,
        [
            f"{part.path}: manifest says {part.entry.bytes} bytes, file has "
            f"{'none (it is gone)' if sizes[part.path] is None else sizes[part.path]}"
            for part in parts
            if sizes[part.path] != part.entry.bytes
        ],
    )
    threads = max(1, min(len(parts), os.cpu_count() or 1))
    with ThreadPoolExecutor(threads, thread_name_prefix="verify-parts") as pool:
        scanned = dict(zip((part.path for part in parts), pool.map(_scan, parts), strict=True))
    _fail(
        PartChecksumError,
        [
            f"{part.path}: manifest says CRC-32 {part.entry.crc32}, file has "
            f"{scanned[part.path][0]}"
            for part in parts
            if scanned[part.path][0] != part.entry.crc32
        ],
    )
    _fail(PartRowCountError, [problem for _, problems in scanned.values() for problem in problems])
    return [part for part in parts if part.entry.rows]


def _sizes(parts: Sequence[PartFile]) -> dict[str, int | None]:
    """The size of each part file (``None``: it is gone).

    Raises:
        PartSizeError: a part cannot be looked at.
    """
    if all(is_local(part.path) for part in parts):
        return {part.path: _size(part.path) for part in parts}
    try:
        return sizes_of([part.path for part in parts])
    except (OSError, StorageError) as exc:
        raise PartSizeError(f"cannot list the part files: {exc}") from exc


def _size(path: str) -> int:
    """The size of a local part file.

    Raises:
        PartSizeError: it cannot be read.
    """
    try:
        return os.stat(local_path(path)).st_size
    except OSError as exc:
        raise PartSizeError(f"{path}: {exc}") from exc


def _scan(part: PartFile) -> tuple[str, list[str]]:
    """Read a part file whose size matches its manifest: its CRC-32 (as the manifest writes it)
    and what is wrong with its segments' line counts. The reads, the CRC and the counting
    release the GIL, so parts are scanned in parallel threads."""
    if not is_local(part.path):
        return _scan_stored(part)
    buffer = bytearray(VERIFY_READ_BYTES)
    view = memoryview(buffer)
    counter = _PartCounter(part)
    with open(local_path(part.path), "rb", buffering=0) as handle:
        for segment in part.entry.segments:
            left = segment.length
            while left:
                got = handle.readinto(view[: min(left, len(buffer))])
                if not got:
                    raise PartSizeError(f"{part.path}: ended while being read")
                counter.add(view[:got])
                left -= got
            counter.end_segment(segment)
    return counter.result()


def _scan_stored(part: PartFile) -> tuple[str, list[str]]:
    """``_scan`` of a part in an object store: ranged reads of ``VERIFY_READ_BYTES``."""
    counter = _PartCounter(part)
    try:
        reader = open_part(part.path)
    except (OSError, StorageError) as exc:
        raise PartSizeError(f"{part.path}: cannot be read: {exc}") from exc
    try:
        offset = 0
        for segment in part.entry.segments:
            left = segment.length
            while left:
                try:
                    data = reader.read_at(offset, min(left, VERIFY_READ_BYTES))
                except OSError as exc:
                    raise PartSizeError(f"{part.path}: cannot be read: {exc}") from exc
                if not data:
                    raise PartSizeError(f"{part.path}: ended while being read")
                counter.add(data)
                offset += len(data)
                left -= len(data)
            counter.end_segment(segment)
    finally:
        reader.close()
    return counter.result()


class _PartCounter:
    """A part's CRC-32 and its segments' lines, from its bytes in order."""

    def __init__(self, part: PartFile) -> None:
        self._part = part
        self._crc = 0
        self._newlines = 0
        self._last = _NEWLINE
        self._problems: list[str] = []

    def add(self, data: bytes | memoryview) -> None:
        """The next bytes of the current segment."""
        self._crc = crc32(data, self._crc)
        self._newlines += count_newlines(data)
        self._last = data[-1]

    def end_segment(self, segment: Segment) -> None:
        """``segment``'s bytes were all added: check its lines."""
        lines = self._newlines + (0 if self._last == _NEWLINE else 1)
        if lines != segment.lines:
            self._problems.append(
                f"{self._part.path}: the segment at part_offset {segment.part_offset} holds "
                f"{lines} lines, the manifest says {segment.lines}"
            )
        elif segment.kind is SegmentKind.LONG_LINE and self._newlines:
            self._problems.append(
                f"{self._part.path}: the segment at part_offset {segment.part_offset} is an "
                "over-long line's prefix, and holds a newline"
            )
        self._newlines, self._last = 0, _NEWLINE

    def result(self) -> tuple[str, list[str]]:
        """The CRC-32 (as the manifest writes it) and the problems found."""
        return f"{self._crc:08x}", self._problems


def _fail(error: type[LandingError], problems: Sequence[str]) -> None:
    """Raise ``error`` listing ``problems``, if there are any."""
    if problems:
        raise error("part files do not match their manifests:\n  " + "\n  ".join(problems))
