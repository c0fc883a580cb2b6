"""RequestCheckpointOperator's run modes against a real pipeline: metastore, files, collector.

Each test has its own pipeline config, log file and metastore (SQLite, or a fresh PostgreSQL
database in the PostgreSQL pass); collection is the real one-shot collector. Only the Airflow
task context is a stand-in (``make_context``), with the Task SDK's own ``DagRunType``.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from airflow.sdk.api.datamodels._generated import DagRunType
from airflow.sdk.exceptions import AirflowFailException
from sluice_airflow.operators.sluice import (
    CHECKPOINT_DIR_KEY,
    RequestCheckpointOperator,
    is_backfill,
)

from pipeline_core.metastore import CheckpointState, Metastore
from pipeline_core.operations import PipelineOperations
from pipeline_core.testing import append
from tests.support.fake_pipeline import FakeTaskInstance, make_context
from tests.support.pipelines import write_config

pytestmark = pytest.mark.timeout(120)

T0 = datetime(2026, 11, 22, 10, 0, tzinfo=timezone.utc)
FIVE_MINUTES = timedelta(minutes=5)


def line(i: int) -> bytes:
    return (
        f'10.0.0.1 - - [22/Nov/2026:10:00:{i % 60:02d} +0000] "GET /item/{i} HTTP/1.1" 200 1 '
        '"-" "t/1"'
    ).encode()


@pytest.fixture
def config(tmp_path: Path, metastore_url: str) -> Path:
    return write_config(tmp_path, metastore_url)


@pytest.fixture
def log(tmp_path: Path) -> Path:
    path = tmp_path / "logs" / "access.log"
    append(path, *(line(i) for i in range(5)))
    return path


def operator(config: Path, **kwargs: Any) -> RequestCheckpointOperator:
    return RequestCheckpointOperator(
        task_id="request_checkpoint", config_path=str(config), **kwargs
    )


def one(result: int | list[int]) -> int:
    """The single checkpoint id a normal, force_seal or reprocess run returns."""
    assert isinstance(result, int), result
    return result


def backfill_context(start: datetime, end: datetime, **params: Any) -> Any:
    return make_context(
        run_id=f"backfill__{start.isoformat()}",
        data_interval=(start, end),
        dag_run=SimpleNamespace(run_type=DagRunType.BACKFILL),
        params=params,
    )


def states(config: Path) -> dict[int, CheckpointState]:
    return {
        info.checkpoint_id: info.state for info in PipelineOperations(config).checkpoints.newest()
    }


# --- normal -----------------------------------------------------------------------------------


def test_normal_records_the_run_data_interval_and_seals_in_process(config: Path, log: Path) -> None:
    ti = FakeTaskInstance()

    checkpoint_id = one(
        operator(config).execute(
            make_context(ti, run_id="scheduled-1", data_interval=(T0, T0 + FIVE_MINUTES))
        )
    )

    operations = PipelineOperations(config)
    info = operations.checkpoint(checkpoint_id)
    assert info.state == CheckpointState.SEALED
    assert info.run_id == "scheduled-1"
    assert info.line_count == 5
    assert operations.checkpoints.data_interval(checkpoint_id) == (T0, T0 + FIVE_MINUTES)
    assert ti.pushed == {CHECKPOINT_DIR_KEY: str(info.staging_dir)}


def test_a_retried_normal_run_neither_requests_nor_collects_again(config: Path, log: Path) -> None:
    context = make_context(run_id="scheduled-1", data_interval=(T0, T0 + FIVE_MINUTES))
    first = one(operator(config).execute(context))
    append(log, line(5))

    second = one(operator(config).execute(context))

    assert first == second
    assert list(states(config)) == [first]
    assert PipelineOperations(config).checkpoint(first).line_count == 5


# --- force_seal -------------------------------------------------------------------------------


def test_force_seal_collects_even_when_collect_if_idle_is_off(config: Path, log: Path) -> None:
    checkpoint_id = one(
        operator(config, collect_if_idle=False).execute(
            make_context(run_id="manual-1", params={"mode": "force_seal"})
        )
    )

    info = PipelineOperations(config).checkpoint(checkpoint_id)
    assert info.state == CheckpointState.SEALED
    assert info.line_count == 5


def test_force_seal_leaves_the_request_to_the_worker_holding_the_lease(
    config: Path, log: Path, metastore_url: str
) -> None:
    # A live worker's lease (another process), as the collector writes it.
    store = Metastore.open(metastore_url)
    try:
        assert store.acquire_lease("web_access", "test-host", "worker-elsewhere:1:abc", 60)
        checkpoint_id = one(
            operator(config).execute(make_context(run_id="manual-1", params={"mode": "force_seal"}))
        )
    finally:
        store.release_lease("web_access", "test-host", "worker-elsewhere:1:abc")
        store.close()

    assert PipelineOperations(config).checkpoint(checkpoint_id).state == CheckpointState.REQUESTED


# --- reprocess --------------------------------------------------------------------------------


@pytest.mark.parametrize("committed", [False, True], ids=["sealed", "committed"])
def test_reprocess_names_an_existing_checkpoint_without_collecting(
    config: Path, log: Path, metastore_url: str, committed: bool
) -> None:
    [sealed] = PipelineOperations(config).collect_once().sealed
    if committed:
        store = Metastore.open(metastore_url)
        store.commit_checkpoint(sealed.checkpoint_id, {"rows": {"access": 5}})
        store.close()
    append(log, line(5))
    ti = FakeTaskInstance()

    result = operator(config).execute(
        make_context(
            ti,
            run_id="manual-2",
            params={"mode": "reprocess", "checkpoint_id": sealed.checkpoint_id},
        )
    )

    assert result == sealed.checkpoint_id
    assert list(states(config)) == [sealed.checkpoint_id]  # nothing requested, nothing sealed
    assert ti.pushed == {CHECKPOINT_DIR_KEY: str(sealed.staging_dir)}


@pytest.mark.parametrize(
    ("checkpoint_id", "message"),
    [
        (None, "needs the checkpoint_id param"),
        (99, "there is no checkpoint 99"),
        ("two", "must be a positive integer"),
    ],
)
def test_reprocess_fails_without_retries_for_a_bad_checkpoint_id(
    config: Path, checkpoint_id: object, message: str
) -> None:
    context = make_context(params={"mode": "reprocess", "checkpoint_id": checkpoint_id})

    with pytest.raises(AirflowFailException, match=message):
        operator(config).execute(context)


def test_reprocess_refuses_a_checkpoint_that_is_not_sealed(config: Path) -> None:
    requested = PipelineOperations(config).request_checkpoint(run_id="other-run")
    context = make_context(params={"mode": "reprocess", "checkpoint_id": requested.checkpoint_id})

    with pytest.raises(AirflowFailException, match="is requested; only sealed or committed"):
        operator(config).execute(context)


# --- spark_only -------------------------------------------------------------------------------


def test_spark_only_returns_every_sealed_uncommitted_checkpoint(
    config: Path, log: Path, metastore_url: str
) -> None:
    operations = PipelineOperations(config)
    [first] = operations.collect_once().sealed
    append(log, line(5))
    [second] = operations.collect_once().sealed
    store = Metastore.open(metastore_url)
    store.commit_checkpoint(first.checkpoint_id, {"rows": {"access": 5}})
    store.close()
    append(log, line(6))

    ids = operator(config).execute(make_context(run_id="manual-3", params={"mode": "spark_only"}))

    assert ids == [second.checkpoint_id]
    assert list(states(config)) == [first.checkpoint_id, second.checkpoint_id]


# --- backfill ---------------------------------------------------------------------------------


def test_backfill_runs_are_recognised_by_their_run_type() -> None:
    assert is_backfill(backfill_context(T0, T0 + FIVE_MINUTES))
    assert not is_backfill(make_context(dag_run=SimpleNamespace(run_type=DagRunType.MANUAL)))
    assert not is_backfill(make_context())


def test_backfill_re_lands_the_checkpoints_requested_for_its_interval(
    config: Path, log: Path
) -> None:
    scheduled = operator(config).execute(
        make_context(run_id="scheduled-1", data_interval=(T0, T0 + FIVE_MINUTES))
    )
    append(log, line(5))
    landed = operator(config).execute(
        make_context(run_id="scheduled-2", data_interval=(T0 + FIVE_MINUTES, T0 + 2 * FIVE_MINUTES))
    )
    # Checkpoint 1 was never landed here: the second run lands it along with its own.
    assert isinstance(landed, list) and landed[0] == scheduled
    later = landed[-1]
    append(log, line(6))
    before = states(config)

    first = operator(config).execute(backfill_context(T0, T0 + FIVE_MINUTES))
    both = operator(config).execute(backfill_context(T0, T0 + 2 * FIVE_MINUTES))
    # The same instant in another time zone is the same interval.
    plus_two = timezone(timedelta(hours=2))
    shifted = operator(config).execute(
        backfill_context(T0.astimezone(plus_two), (T0 + FIVE_MINUTES).astimezone(plus_two))
    )

    assert first == shifted == [scheduled]
    assert both == [scheduled, later]
    assert states(config) == before  # nothing requested, nothing collected


def test_backfill_of_an_interval_without_checkpoints_is_empty(config: Path, log: Path) -> None:
    operator(config).execute(make_context(run_id="s-1", data_interval=(T0, T0 + FIVE_MINUTES)))
    append(log, line(5))

    ids = operator(config).execute(
        backfill_context(T0 - 2 * FIVE_MINUTES, T0 - FIVE_MINUTES, mode="force_seal")
    )

    assert ids == []
    assert len(states(config)) == 1


def test_backfill_finds_checkpoints_no_run_requested_by_their_seal_time(
    config: Path, log: Path
) -> None:
    [sealed] = PipelineOperations(config).collect_once().sealed  # like `sluice collect --once`
    assert sealed.sealed_at is not None
    start = sealed.sealed_at.replace(second=0, microsecond=0)

    around = operator(config).execute(backfill_context(start, start + timedelta(minutes=1)))
    after = operator(config).execute(
        backfill_context(start + timedelta(minutes=1), start + timedelta(minutes=2))
    )

    assert around == [sealed.checkpoint_id]
    assert after == []


def test_backfill_of_a_zero_width_interval_matches_that_instant(config: Path, log: Path) -> None:
    checkpoint_id = operator(config).execute(make_context(run_id="t-1", data_interval=(T0, T0)))

    assert operator(config).execute(backfill_context(T0, T0)) == [checkpoint_id]
    assert operator(config).execute(backfill_context(T0 + FIVE_MINUTES, T0 + FIVE_MINUTES)) == []


def test_backfill_skips_checkpoints_not_sealed(config: Path) -> None:
    PipelineOperations(config).request_checkpoint(
        run_id="waiting", data_interval=(T0, T0 + FIVE_MINUTES)
    )

    assert operator(config).execute(backfill_context(T0, T0 + FIVE_MINUTES)) == []
