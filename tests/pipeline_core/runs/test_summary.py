"""commit_summary and run_note: what a run committed."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from pipeline_core.operations import CheckpointInfo, CheckpointState
from pipeline_core.runs import commit_summary, interval_key, interval_keys, run_note
from tests.pipeline_core.runs.support import StubPipeline

LANDING = {
    "checkpoint_id": 1,
    "rows": {"access": 7, "errors": 2},
    "rejects": {"no_match": 1},
    "rescued": {"access": 2, "errors": 1},
    "snapshots": {"access": 101, "errors": 102, "_rejects": 103},
    "input_lines": 10,
}


def committed(count: int, landing: dict[str, Any] | None = None) -> list[CheckpointInfo]:
    stub = StubPipeline()
    return [
        replace(
            stub.add(CheckpointState.COMMITTED),
            line_count=10,
            byte_count=1000,
            landing=dict(LANDING if landing is None else landing),
        )
        for _ in range(count)
    ]


def test_one_checkpoint_adds_up_its_counts_per_table_and_per_reason() -> None:
    assert commit_summary(committed(1), single=True) == {
        "checkpoint_id": 1,
        "checkpoint_ids": [1],
        "lines": 10,
        "bytes": 1000,
        "rows": 9,
        "rejects": 1,
        "rescued": 3,
        "landing": LANDING,
        "snapshots": LANDING["snapshots"],
    }


def test_counts_the_landing_job_did_not_report_are_none() -> None:
    summary = commit_summary(committed(1, landing={}), single=True)

    assert (summary["rows"], summary["rejects"], summary["rescued"]) == (None, None, 0)


def test_a_list_of_checkpoints_has_totals_and_each_summary() -> None:
    summary = commit_summary(committed(2), single=False)

    assert summary["checkpoint_id"] is None
    assert summary["checkpoint_ids"] == [1, 2]
    assert (
        summary["lines"],
        summary["bytes"],
        summary["rows"],
        summary["rejects"],
        summary["rescued"],
    ) == (20, 2000, 18, 2, 6)
    assert [item["checkpoint_id"] for item in summary["checkpoints"]] == [1, 2]


def test_a_list_names_the_snapshots_the_last_commit_read() -> None:
    first, last = committed(2)
    last = replace(last, landing={**LANDING, "snapshots": {"access": 201, "_rejects": 203}})

    summary = commit_summary([first, last], single=False)

    assert summary["snapshots"] == {"access": 201, "_rejects": 203}
    assert [item["snapshots"] for item in summary["checkpoints"]] == [
        LANDING["snapshots"],
        {"access": 201, "_rejects": 203},
    ]


def test_a_checkpoint_committed_without_snapshots_names_none() -> None:
    assert commit_summary(committed(1, landing={}), single=True)["snapshots"] == {}


def test_a_list_with_an_unknown_count_has_an_unknown_total() -> None:
    [known] = committed(1)
    [unknown] = committed(1, landing={"rows": {"access": 10}})

    summary = commit_summary([known, unknown], single=False)

    assert (summary["rows"], summary["rejects"]) == (19, None)


def test_an_empty_list_is_zeros() -> None:
    assert commit_summary([], single=False) == {
        "checkpoint_id": None,
        "checkpoint_ids": [],
        "lines": 0,
        "bytes": 0,
        "rows": 0,
        "rejects": 0,
        "rescued": 0,
        "snapshots": {},
        "checkpoints": [],
    }


@pytest.mark.parametrize(
    ("summary", "note"),
    [
        (
            {"checkpoint_ids": [3], "lines": 10, "bytes": 900, "rows": 9, "rejects": 1},
            "checkpoint 3: 10 lines (900 bytes) -> 9 rows, 1 rejects",
        ),
        (
            {"checkpoint_ids": [3, 4], "lines": 20, "bytes": 1800, "rows": None, "rejects": 0},
            "checkpoints 3, 4: 20 lines (1800 bytes) -> ? rows, 0 rejects",
        ),
        (
            {"checkpoint_ids": [5], "lines": 4, "bytes": 90, "rows": 4, "rejects": 0, "rescued": 2},
            "checkpoint 5: 4 lines (90 bytes) -> 4 rows, 0 rejects (2 values rescued)",
        ),
        ({"checkpoint_ids": []}, "no checkpoint to land"),
    ],
)
def test_run_note(summary: dict[str, Any], note: str) -> None:
    assert run_note(summary) == note


def interval(hour: int, minutes: int = 5) -> tuple[datetime, datetime]:
    start = datetime(2026, 11, 25, hour, 0, tzinfo=timezone.utc)
    return start, start + timedelta(minutes=minutes)


def test_each_checkpoint_is_keyed_by_the_interval_of_the_run_that_requested_it() -> None:
    first, second, third = committed(3)
    checkpoints = [
        replace(first, data_interval=interval(10)),
        replace(second, data_interval=interval(9)),
        replace(third, data_interval=interval(10)),
    ]

    assert interval_keys(checkpoints, interval(12)) == [
        "2026-11-25T09:00:00",
        "2026-11-25T10:00:00",
    ]


def test_a_checkpoint_no_run_requested_takes_the_landing_run_interval() -> None:
    [unrequested] = committed(1)

    assert interval_keys([unrequested], interval(12)) == ["2026-11-25T12:00:00"]
    assert interval_keys([unrequested], None) == []
    assert interval_keys([], interval(12)) == []


def test_interval_keys_are_utc() -> None:
    paris = timezone(timedelta(hours=1))

    assert interval_key(datetime(2026, 11, 25, 11, 30, tzinfo=paris)) == "2026-11-25T10:30:00"
    assert interval_key(datetime(2026, 11, 25, 11, 30)) == "2026-11-25T11:30:00"
