"""The status of a pipeline on this host (``sluice status``, ``sluice report``), read through
the metastore a ``with open_pipeline(...)`` block holds."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline_core.config import METASTORE_URL_ENV
from pipeline_core.operations import CheckpointInfo, open_pipeline
from pipeline_core.state import newest_checkpoints, pipeline_status
from pipeline_core.testing import append, lines
from tests.support.pipelines import write_config


@pytest.fixture(autouse=True)
def no_metastore_override(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(METASTORE_URL_ENV, raising=False)


def test_should_report_files_checkpoints_and_the_lease(tmp_path: Path, metastore_url: str) -> None:
    log = tmp_path / "logs" / "access.log"
    with open_pipeline(write_config(tmp_path, metastore_url)) as pipeline:
        append(log, *lines("sealed", 5))
        (info,) = pipeline.collect_once().sealed
        append(log, *lines("unsealed", 1))
        with pipeline.context.view() as view:
            status = pipeline_status(pipeline.config, view)

    assert (status.pipeline, status.host, status.lease_holder) == ("web_access", "test-host", None)
    (file,) = status.files
    assert file.path == str(log)
    assert file.sealed_offset == info.byte_count
    assert file.unread_bytes == log.stat().st_size - info.byte_count > 0
    assert status.checkpoints == (info,)


def test_should_list_the_newest_checkpoints_oldest_first(
    tmp_path: Path, metastore_url: str
) -> None:
    log = tmp_path / "logs" / "access.log"
    with open_pipeline(write_config(tmp_path, metastore_url)) as pipeline:
        sealed: list[CheckpointInfo] = []
        for count in (1, 2, 3):
            append(log, *lines("sealed", count))
            sealed += pipeline.collect_once().sealed
        with pipeline.context.view() as view:
            newest = newest_checkpoints(pipeline.config, view, limit=2)

    assert newest == sealed[1:]
    assert [info.line_count for info in newest] == [2, 3]
