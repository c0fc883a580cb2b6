"""Chunks of raw lines into the handoff table: one row per line, its offset and its bytes."""

from __future__ import annotations

import pyarrow as pa

from pipeline_core.sinks import HANDOFF_SCHEMA, lines_table
from pipeline_core.source import Chunk, count_lines

FP_A = "00000000000000aa"
FP_B = "00000000000000bb"


def chunk(data: bytes, start: int = 0, fingerprint: str = FP_A) -> Chunk:
    return Chunk("access", fingerprint, start, data, count_lines(data))


def rows(table: pa.Table) -> list[tuple[str, int, bytes]]:
    return [
        (str(row["file_fingerprint"]), int(row["byte_offset"]), bytes(row["line"]))
        for row in table.to_pylist()
    ]


def test_should_make_a_row_per_terminated_line_with_its_offset() -> None:
    table = lines_table([chunk(b"GET /\nPOST /login\n", start=100)])

    assert table.schema == HANDOFF_SCHEMA
    assert rows(table) == [(FP_A, 100, b"GET /"), (FP_A, 106, b"POST /login")]


def test_should_keep_an_unterminated_last_line() -> None:
    table = lines_table([chunk(b"first\nno newline", start=10)])

    assert rows(table) == [(FP_A, 10, b"first"), (FP_A, 16, b"no newline")]


def test_should_make_a_row_of_a_chunk_without_any_newline() -> None:
    table = lines_table([chunk(b"x" * 5000, start=7)])

    assert rows(table) == [(FP_A, 7, b"x" * 5000)]


def test_should_keep_empty_lines() -> None:
    table = lines_table([chunk(b"\n\nmiddle\n\n", start=0)])

    assert rows(table) == [(FP_A, 0, b""), (FP_A, 1, b""), (FP_A, 2, b"middle"), (FP_A, 9, b"")]


def test_should_keep_bytes_that_are_not_utf8_exactly() -> None:
    odd = [b"\xff\xfe invalid", b"nul\x00byte", b"\r carriage\r"]

    table = lines_table([chunk(b"".join(line + b"\n" for line in odd))])

    assert [line for _, _, line in rows(table)] == odd


def test_should_append_lines_of_consecutive_chunks_in_order() -> None:
    table = lines_table([chunk(b"a\nbb\n", start=0), chunk(b"ccc\n", start=5)])

    assert rows(table) == [(FP_A, 0, b"a"), (FP_A, 2, b"bb"), (FP_A, 5, b"ccc")]


def test_should_encode_several_files_as_a_dictionary_column() -> None:
    table = lines_table(
        [
            chunk(b"a1\na2\n", start=0, fingerprint=FP_A),
            chunk(b"b1\n", start=40, fingerprint=FP_B),
            chunk(b"a3\n", start=6, fingerprint=FP_A),
        ]
    )

    column = table.column("file_fingerprint").combine_chunks()
    assert pa.types.is_dictionary(column.type)
    assert column.dictionary.to_pylist() == [FP_A, FP_B]
    assert column.indices.to_pylist() == [0, 0, 1, 0]
    assert rows(table) == [
        (FP_A, 0, b"a1"),
        (FP_A, 3, b"a2"),
        (FP_B, 40, b"b1"),
        (FP_A, 6, b"a3"),
    ]


def test_should_skip_empty_chunks() -> None:
    table = lines_table([chunk(b""), chunk(b"only\n", start=3), chunk(b"", start=8)])

    assert rows(table) == [(FP_A, 3, b"only")]


def test_should_return_an_empty_table_with_the_schema_for_no_lines() -> None:
    for chunks in ([], [chunk(b"")]):
        table = lines_table(chunks)

        assert table.num_rows == 0
        assert table.schema == HANDOFF_SCHEMA


def test_should_have_as_many_rows_as_counted_lines() -> None:
    data = b"one\n\ntwo\nthree"

    assert lines_table([chunk(data)]).num_rows == count_lines(data) == 4
