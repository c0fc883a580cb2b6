"""The ``airflow_task`` format: the task logs a real Airflow 3 wrote of a DAG run (its
LocalExecutor's task supervisor, :mod:`tests.support.airflow_task_log`), landed into the lake
and read back, checked against what the tasks logged; lines that are no such record rejected
with their reason."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from pipeline_core.lake import LakeLocation
from pipeline_core.staging_contract import checkpoint_dir
from pipeline_core.testing import table_rows
from spark_jobs.formats import RejectReason, parse
from spark_jobs.landing import land
from tests.spark_jobs.support import PIPELINE, ParsedOnce, StagingRows, landing, reason_of
from tests.support.airflow_task_log import AirflowTaskLogs, run_airflow_tasks
from tests.support.staging import write_batch

pytestmark = [pytest.mark.spark]

LEVELS = {"exception": "error"}
"""The level structlog writes for a ``logging`` method, where it is not the method's name."""


@pytest.fixture(scope="module")
def airflow_tasks(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AirflowTaskLogs]:
    yield run_airflow_tasks(tmp_path_factory.mktemp("airflow-tasks"))


def landed(
    spark: SparkSession, lake: LakeLocation, staging: Path, logs: AirflowTaskLogs
) -> dict[str, list[dict[str, Any]]]:
    """Each task's log landed as a source of its own (one file each) and read back, by task, in
    the order of the file; none rejected."""
    written, tasks = 0, {}
    for number, (task_id, log) in enumerate(sorted(logs.logs.items())):
        lines = log.read_bytes().splitlines()
        assert lines, task_id
        written += len(lines)
        tasks[f"{number:016x}"] = task_id
        write_batch(
            staging, PIPELINE, 1, "worker-1", "tasks", "airflow_task", lines, f"{number:016x}"
        )
    summary = land(spark, landing(lake, checkpoint_dir(staging, PIPELINE, 1)))
    assert summary["checkpoints"][0]["rows"] == {"tasks": written}, table_rows(
        lake, "_rejects"
    ).to_pylist()
    rows = table_rows(lake, "tasks").to_pylist()
    by_task: dict[str, list[dict[str, Any]]] = {}
    for row in sorted(rows, key=lambda r: (r["file_fingerprint"], r["byte_offset"])):
        row["extra"] = dict(row["extra"])
        by_task.setdefault(tasks[row["file_fingerprint"]], []).append(row)
    return by_task


@pytest.mark.slow
@pytest.mark.metastore
@pytest.mark.sqlite_pass
@pytest.mark.timeout(600)
def test_should_land_each_record_of_a_task_log_with_what_the_task_logged(
    spark: SparkSession, lake: LakeLocation, tmp_path: Path, airflow_tasks: AirflowTaskLogs
) -> None:
    rows = landed(spark, lake, tmp_path / "staging", airflow_tasks)

    for task_id in ("talk", "fail"):
        ours = [r for r in rows[task_id] if str(r["logger"]).startswith("sluice.probe")]
        truth = [t for t in airflow_tasks.truth if t["task_id"] == task_id]
        assert len(ours) == len(truth), [r["message"] for r in ours]
        for row, record in zip(ours, truth, strict=True):
            assert row["logger"] == record["logger"]
            assert row["message"] == record["message"]
            assert row["level"] == LEVELS.get(record["level"], record["level"])
            before = datetime.fromtimestamp(record["before"], timezone.utc)
            after = datetime.fromtimestamp(record["after"], timezone.utc)
            assert before <= row["event_time"].astimezone(timezone.utc) <= after, record
            extra = row["extra"]
            assert (extra["dag_id"], extra["task_id"]) == ("task_log_probe", task_id)
            assert (extra["run_id"], extra["try_number"]) == (airflow_tasks.run_id, "1")
            for key, value in record["keys"].items():  # a string as it is, others as JSON
                found = extra[key] if isinstance(value, str) else json.loads(extra[key])
                assert found == value, key
            if record["level"] == "exception":
                (error,) = json.loads(row["error"])
                assert (error["exc_type"], error["exc_value"]) == ("KeyError", "'missing'")
            else:
                assert row["error"] is None, record
            assert not {"timestamp", "level", "event", "logger", "error_detail"} & set(extra)

    failure = [r for r in rows["fail"] if r["error"] is not None]
    assert len(failure) == 1
    assert (failure[0]["level"], failure[0]["logger"]) == ("error", "task")
    raised, cause = json.loads(failure[0]["error"])
    assert (raised["exc_type"], raised["exc_value"]) == (
        "RuntimeError",
        "the task failed on purpose",
    )
    assert (cause["exc_type"], cause["is_cause"]) == ("ValueError", True)
    assert any(frame["name"] == "fail" for frame in raised["frames"])
    (printed,) = [r for r in rows["talk"] if r["logger"] == "task.stdout"]
    assert printed["message"] == "printed to stdout"
    assert printed["extra"] == {}


TASK_LOG_CASES: list[tuple[bytes, str | None]] = [
    (b'{"timestamp":"2026-11-28T20:19:09.253470Z","level":"info","event":"x"}', None),
    (b'{"timestamp":"2026-11-28T20:19:09.253470Z","event":"x"} trailing', "invalid_json"),
    (b'{"timestamp":"2026-11-28T20:19:09.253470Z","event":"x"', "invalid_json"),
    (b'{"timestamp":"2026-11-28T20:19:09Z","event":"x","event":"y"}', "invalid_json"),
    (b"Task failed with exception", "invalid_json"),
    (b'["2026-11-28T20:19:09.253470Z", "x"]', "no_match"),
    (b'"2026-11-28T20:19:09.253470Z"', "no_match"),
    (b"null", "no_match"),
    (b'{"level":"info","event":"no time"}', "bad_timestamp"),
    (b'{"timestamp":"yesterday","event":"x"}', "bad_timestamp"),
    (b'{"timestamp":1795897149,"event":"x"}', "bad_timestamp"),
    (b'{"timestamp":"2026-11-28T20:19:09Z","event":"caf\xff"}', "invalid_utf8"),
]


@pytest.mark.parametrize(("line", "reason"), TASK_LOG_CASES)
def test_should_reject_what_is_no_task_log_record_with_its_reason(
    parsed_once: ParsedOnce, line: bytes, reason: str | None
) -> None:
    lines = [case[0] for case in TASK_LOG_CASES]
    outcome = parsed_once.of(lines, "airflow_task", source="tasks")[line]

    assert reason_of(outcome) == reason
    assert reason is None or RejectReason(reason)


def test_should_read_a_record_into_its_columns(staging_rows: StagingRows) -> None:
    line = (
        b'{"timestamp":"2026-11-28T21:19:09.253470+01:00","level":"warning","event":"caf\\u00e9",'
        b'"logger":"sluice.probe","try_number":1,"bundle_version":null,"ok":true,'
        b'"source":{"path":"/a"},"error_detail":[{"exc_type":"KeyError"}],"chan":"stdout"}\r'
    )
    parsed, rejects = parse(staging_rows([line], source="tasks"), "airflow_task")

    assert rejects.count() == 0
    (row,) = parsed.collect()
    assert row["event_time"].astimezone(timezone.utc) == datetime(
        2026, 11, 28, 20, 19, 9, 253470, tzinfo=timezone.utc
    )
    assert (row["level"], row["logger"], row["message"]) == ("warning", "sluice.probe", "café")
    assert json.loads(row["error"]) == [{"exc_type": "KeyError"}]
    assert row["extra"] == {
        "try_number": "1",
        "bundle_version": None,
        "ok": "true",
        "source": '{"path":"/a"}',
        "chan": "stdout",
    }
