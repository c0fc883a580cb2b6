"""The compiled line tests (``_framing.c``); see ``pipeline_core.source._preset_lines``."""

from collections.abc import Sequence

import numpy as np

Buffer = bytes | bytearray | memoryview | np.ndarray

PYTHON: int
JAVA: int
GO: int
GROUP_PYTHON: int
GROUP_JAVA: int
GROUP_TRACEBACK_HEAD: int
GROUP_CHAINED: int
GROUP_CONTEXT_HEAD: int
GROUP_GO: int

def count_newlines(data: Buffer, /) -> int: ...
def line_starts(data: Buffer, /) -> bytearray: ...
def one_line_events(data: Buffer, /) -> tuple[int, int] | None: ...
def preset_continuing(data: Buffer, starts: Buffer, flags: int, /) -> bytearray: ...
def event_runs(
    marks: Buffer,
    starts: Buffer,
    size: int,
    max_lines: int,
    max_bytes: int,
    settled: int,
    /,
) -> tuple[bytearray, bytearray, int, int] | None: ...
def newline_finder(name: str | None = None, /) -> tuple[str, tuple[str, ...]]: ...
def set_words(words: Sequence[tuple[bytes, int]], /) -> None: ...
def frame_lines(
    data: Buffer, flags: int, max_lines: int, max_bytes: int, lookahead: int, /
) -> tuple[bytearray, bytearray, tuple[bytes, bytes, int, int] | None]: ...
def read_judged(
    fd: int,
    offset: int,
    size: int,
    flags: int,
    max_lines: int,
    max_bytes: int,
    lookahead: int,
    /,
) -> tuple[
    bytearray,
    int,
    tuple[int, int] | None,
    tuple[bytearray, bytearray, tuple[bytes, bytes, int, int] | None] | None,
]: ...
