"""Fixtures shared by the landing job's tests."""

from __future__ import annotations

import uuid
from datetime import datetime
from pathlib import Path

import pytest
from pyspark.sql import DataFrame, SparkSession

from pipeline_core.staging_contract import ManifestPart
from spark_jobs.checkpoint import PartFile
from spark_jobs.landing import read_source
from tests.spark_jobs.support import CHECKPOINT_ID, FINGERPRINT, HOST, ParsedOnce, StagingRows
from tests.support.staging import DEFAULT_SEALED_AT, Line, line_offsets, write_part


@pytest.fixture
def staging_rows(spark: SparkSession, tmp_path: Path) -> StagingRows:
    """Build staging rows (as the landing job reads them) from raw lines and events, sealed
    at ``sealed_at``."""
    return staging_rows_in(spark, tmp_path)


@pytest.fixture(scope="module")
def parsed_once(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> ParsedOnce:
    """Lines parsed once for the whole module (see :class:`ParsedOnce`)."""
    return ParsedOnce(staging_rows_in(spark, tmp_path_factory.mktemp("parsed-once")))


def staging_rows_in(spark: SparkSession, folder: Path) -> StagingRows:
    """A ``staging_rows`` writing its part files into ``folder``."""

    def build(
        lines: list[Line], source: str = "access", sealed_at: datetime = DEFAULT_SEALED_AT
    ) -> DataFrame:
        path = folder / f"part-{source}-{uuid.uuid4().hex}.lines"
        segments = write_part(path, FINGERPRINT, line_offsets(lines, 0), lines)
        size = path.stat().st_size
        rows = sum(segment.lines for segment in segments)
        entry = ManifestPart(path.name, source, rows, size, "00000000", segments)
        part = PartFile(str(path), CHECKPOINT_ID, HOST, sealed_at, entry)  # no crc32 check
        return read_source(spark, [part], source)

    return build
