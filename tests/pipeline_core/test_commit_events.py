"""The commit step of a checkpoint of multiline events: the lake holds a row or reject per event,
fewer than the lines it sealed, and the metastore's summary says both (no Spark: what a landing
job commits is appended to the lake tables here)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline_core.errors import LandingError
from pipeline_core.operations import CheckpointState, PipelineOperations
from pipeline_core.staging_contract import EVENTS_FORMAT_VERSION, MANIFEST_NAME
from pipeline_core.testing import append
from tests.pipeline_core.test_operations import land_rows
from tests.support.pipelines import write_config

pytestmark = pytest.mark.timeout(60)

LOGGED = (
    b"2026-11-22 10:00:00,001 INFO started",
    b"2026-11-22 10:00:01,002 ERROR request failed",
    b"Traceback (most recent call last):",
    b'  File "/srv/app.py", line 3, in <module>',
    b"KeyError: 'id'",
    b"2026-11-22 10:00:02,003 INFO ok",
)
"""Python's logging: 6 lines, 3 events (the error's line and its traceback are one)."""


@pytest.fixture
def operations(tmp_path: Path, metastore_url: str) -> PipelineOperations:
    multiline = {"multiline": {"preset": "python", "flush_after_s": 0.01}}
    return PipelineOperations(write_config(tmp_path, metastore_url, fmt="raw", source=multiline))


def sealed_events(operations: PipelineOperations, tmp_path: Path) -> int:
    """Seal the logged lines as one checkpoint; its id, checked to be a format 5 batch of
    ``LOGGED``'s events (the last one too: its file is quiet)."""
    append(tmp_path / "logs" / "access.log", *LOGGED)
    sealed = operations.collect_once().sealed
    while not sealed or sum(info.line_count for info in sealed) < len(LOGGED):
        sealed = (*sealed, *operations.collect_once().sealed)
    (info,) = [info for info in sealed if info.line_count]
    assert info.line_count == len(LOGGED)
    manifest = json.loads((info.staging_dir / "test-host" / MANIFEST_NAME).read_text())
    assert manifest["format_version"] == EVENTS_FORMAT_VERSION
    return info.checkpoint_id


def test_a_checkpoint_of_multiline_events_commits_a_row_per_event(
    operations: PipelineOperations, tmp_path: Path
) -> None:
    checkpoint_id = sealed_events(operations, tmp_path)
    snapshots = land_rows(operations, checkpoint_id, 2, {"no_match": 1})

    (committed,) = operations.commit([checkpoint_id])

    assert committed.state is CheckpointState.COMMITTED
    assert committed.landing == {
        "checkpoint_id": checkpoint_id,
        "rows": {"access": 2},
        "rejects": {"no_match": 1},
        "snapshots": snapshots,
        "input_lines": 6,
        "input_events": 3,
    }
    assert (committed.landed.rows, committed.landed.rejects) == (2, 1)


def test_a_row_per_line_of_a_checkpoint_of_multiline_events_is_refused(
    operations: PipelineOperations, tmp_path: Path
) -> None:
    checkpoint_id = sealed_events(operations, tmp_path)
    land_rows(operations, checkpoint_id, 6)

    with pytest.raises(
        LandingError,
        match=rf"checkpoint {checkpoint_id} sealed 6 lines \(3 events\) but the lake tables "
        "hold 6 rows and 0 rejects of it",
    ):
        operations.commit([checkpoint_id])
    assert operations.checkpoint(checkpoint_id).state is not CheckpointState.COMMITTED
