"""The format registry: one definition per format, from which the config's choice, the lake's
Iceberg schema, the docs and ``sluice formats`` derive."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyiceberg.schema import assign_fresh_schema_ids
from pyiceberg.types import IntegerType, MapType

from pipeline_core.cli import main
from pipeline_core.config import SourceConfig
from pipeline_core.formats import (
    FORMATS,
    ColumnType,
    RejectReason,
    SourceFormat,
    format_spec,
    formats_markdown,
)
from pipeline_core.lake import source_schema, type_shape

DOCS = Path(__file__).resolve().parents[3] / "docs" / "formats.md"
ICEBERG = {
    ColumnType.STRING: "string",
    ColumnType.INT: "int",
    ColumnType.LONG: "long",
    ColumnType.TIMESTAMP: "timestamptz",
    ColumnType.MAP: "map<string, string>",
    ColumnType.EXCEPTION: "struct<class: string, message: string, frames: list<struct<class: "
    "string, method: string, file: string, line: int>>>",
}


def test_every_format_has_one_definition() -> None:
    assert set(FORMATS) == set(SourceFormat)
    for name, spec in FORMATS.items():
        assert spec.name is name
        assert len({column.name for column in spec.columns}) == len(spec.columns)
        assert RejectReason.LINE_TOO_LONG in spec.rejects


@pytest.mark.parametrize("fmt", list(SourceFormat), ids=str)
def test_a_formats_table_has_the_common_columns_then_its_own_then_the_checkpoint(
    fmt: SourceFormat,
) -> None:
    schema = source_schema(fmt.value)

    columns = [(field.name, type_shape(field.field_type)) for field in schema.fields]
    common = ["event_id", "file_fingerprint", "byte_offset", "host", "event_time"]
    assert [name for name, _ in columns[:5]] == common
    assert columns[5:-1] == [(c.name, ICEBERG[c.type]) for c in FORMATS[fmt].columns]
    assert columns[-1] == ("checkpoint_id", "long")


def test_an_unknown_format_is_refused_naming_the_known_ones() -> None:
    with pytest.raises(ValueError, match=r"no source format 'syslog' \(formats: nginx_combined, "):
        format_spec("syslog")
    with pytest.raises(ValueError, match="syslog_rfc5424"):
        SourceConfig(paths=["/var/log/x.log"], format="syslog")  # type: ignore[arg-type]


def test_the_docs_table_is_the_registrys(capsys: pytest.CaptureFixture[str]) -> None:
    assert DOCS.read_text(encoding="utf-8") == formats_markdown(), (
        "docs/formats.md is stale: run `sluice formats --markdown > docs/formats.md`"
    )
    assert main(["formats", "--markdown"]) == 0
    assert capsys.readouterr().out == formats_markdown()
    assert main(["formats"]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0] for line in listed] == [fmt.value for fmt in FORMATS]
    assert "stream (string)" in listed[[fmt for fmt in FORMATS].index(SourceFormat.CRI)]


def test_a_map_columns_key_and_value_have_the_ids_a_new_table_gives_them() -> None:
    schema = source_schema(SourceFormat.SYSLOG_RFC5424.value)

    kind = schema.find_field("structured_data").field_type
    assert isinstance(kind, MapType)
    assert (kind.key_id, kind.value_id) == (len(schema.fields) + 1, len(schema.fields) + 2)
    assert assign_fresh_schema_ids(schema) == schema  # what the catalog does on create


def test_a_structs_fields_have_the_ids_a_new_table_gives_them() -> None:
    schema = source_schema(SourceFormat.SPARK_JSON.value)

    nested = [schema.find_field(f"exception.{name}") for name in ("class", "message", "frames")]
    # After every column, then the context map's key and value: as Iceberg numbers them.
    assert [field.field_id for field in nested] == [len(schema.fields) + n for n in (3, 4, 5)]
    assert schema.find_field("exception.frames.element").field_id == len(schema.fields) + 6
    line = schema.find_field("exception.frames.element.line")
    assert (line.field_id, line.field_type) == (len(schema.fields) + 10, IntegerType())
    assert assign_fresh_schema_ids(schema) == schema  # what the catalog does on create


def test_a_bsd_syslog_source_takes_a_timezone() -> None:
    source = SourceConfig(
        paths=["/var/log/syslog"],
        format=SourceFormat.SYSLOG_RFC3164,
        timezone="Europe/Zurich",
    )

    assert source.timezone == "Europe/Zurich"
