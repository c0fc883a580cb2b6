"""Chunks into the handoff part table: a row per chunk, its file, offset, line count, bytes."""

from __future__ import annotations

from pipeline_core.sinks import HANDOFF_SCHEMA, chunks_table
from pipeline_core.source import Chunk, count_lines

FP_A = "00000000000000aa"
FP_B = "00000000000000bb"


def chunk(data: bytes, start: int = 0, fingerprint: str = FP_A) -> Chunk:
    return Chunk("access", fingerprint, start, data, count_lines(data))


def test_should_make_a_row_per_chunk_with_its_file_offset_and_line_count() -> None:
    table = chunks_table(
        [chunk(b"GET /\nPOST /login\n", start=100), chunk(b"x\n", 7, FP_B), chunk(b"tail", 118)]
    )

    assert table.schema == HANDOFF_SCHEMA
    assert [
        (str(r["file_fingerprint"]), r["start_offset"], r["line_count"], r["data"])
        for r in table.to_pylist()
    ] == [(FP_A, 100, 2, b"GET /\nPOST /login\n"), (FP_B, 7, 1, b"x\n"), (FP_A, 118, 1, b"tail")]


def test_should_keep_invalid_utf8_and_nul_bytes_as_they_are() -> None:
    data = b"\xff\xfe bad \x00 nul\n"
    (row,) = chunks_table([chunk(data)]).to_pylist()
    assert row["data"] == data


def test_should_make_an_empty_table_of_no_chunks() -> None:
    table = chunks_table([])
    assert table.num_rows == 0
    assert table.schema == HANDOFF_SCHEMA
