"""CollectorWorkerOperator: a real collector in a thread, serving checkpoint requests.

The operator runs in a background thread (as the task's main thread would run it), against a
real pipeline: config, log file, metastore, collector. Requests come through
``PipelineOperations`` exactly as the pipeline DAG's request task makes them.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from airflow.sdk.exceptions import AirflowException
from sluice_airflow.operators.worker import CollectorWorkerOperator

from pipeline_core.metastore import CheckpointState, Metastore
from pipeline_core.operations import PipelineOperations
from pipeline_core.testing import append, wait_until
from tests.support.fake_pipeline import FakePipeline, make_context
from tests.support.pipelines import write_config

LINE = b'10.0.0.1 - - [22/Nov/2026:10:00:00 +0000] "GET /item/1 HTTP/1.1" 200 12 "-" "t/1"'


class WorkerThread:
    """Runs ``operator.execute`` in a thread; keeps its result or its exception."""

    def __init__(self, operator: CollectorWorkerOperator) -> None:
        self.operator = operator
        self.result: dict[str, Any] | None = None
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, name="test-worker", daemon=True)

    def _run(self) -> None:
        try:
            self.result = self.operator.execute(make_context())
        except BaseException as exc:
            self.error = exc

    def start(self) -> WorkerThread:
        self.thread.start()
        return self

    def join(self, timeout: float) -> None:
        self.thread.join(timeout)
        assert not self.thread.is_alive(), f"the worker did not end within {timeout} s"
        if self.error is not None:
            raise self.error


@pytest.fixture
def config(tmp_path: Path, metastore_url: str) -> Path:
    path = write_config(tmp_path, metastore_url, collector={"lease_seconds": 3})
    append(tmp_path / "logs" / "access.log", *([LINE] * 10))
    return path


@pytest.fixture
def workers() -> Iterator[list[WorkerThread]]:
    """Workers a test started; any still running at the end is stopped."""
    started: list[WorkerThread] = []
    yield started
    for worker in started:
        if worker.thread.is_alive():
            worker.operator.on_kill()
            worker.thread.join(30)


def start_worker(workers: list[WorkerThread], config: Path, **kwargs: Any) -> WorkerThread:
    operator = CollectorWorkerOperator(task_id="collect", config_path=str(config), **kwargs)
    worker = WorkerThread(operator).start()
    workers.append(worker)
    return worker


def test_init_does_no_io(fake_pipeline: FakePipeline) -> None:
    operator = CollectorWorkerOperator(task_id="collect", config_path="/missing.yaml")

    assert fake_pipeline.opened == []
    assert operator.run_for == 3600.0
    assert operator.template_fields == ("config_path",)


@pytest.mark.parametrize("run_for", [0, -1.0, timedelta(0)])
def test_run_for_must_be_positive(run_for: float | timedelta) -> None:
    with pytest.raises(ValueError, match="must be positive"):
        CollectorWorkerOperator(task_id="collect", config_path="/x.yaml", run_for=run_for)


@pytest.mark.timeout(90)
def test_serves_checkpoint_requests_while_running_and_stops_on_kill(
    config: Path, workers: list[WorkerThread]
) -> None:
    operations = PipelineOperations(config)
    worker = start_worker(workers, config, run_for=timedelta(minutes=5))
    wait_until(operations.worker_is_live, 30, "the worker to take the lease")

    requested = operations.request_checkpoint(run_id="scheduled-1")
    wait_until(
        lambda: operations.checkpoint(requested.checkpoint_id).state == CheckpointState.SEALED,
        30,
        "the worker to seal the requested checkpoint",
    )
    assert operations.checkpoint(requested.checkpoint_id).line_count == 10

    append(config.parent / "logs" / "access.log", *([LINE] * 3))
    time.sleep(1.0)  # the worker may or may not have read them when it is stopped
    killed_at = time.monotonic()
    worker.operator.on_kill()
    worker.join(timeout=15)

    assert time.monotonic() - killed_at < 15
    assert worker.result is not None
    assert worker.result["stopped_by"] == "on_kill"
    assert worker.result["files"] == 1
    assert worker.result["lines"] in (10, 13)
    # Stopping seals what was read: every line the worker read is in a checkpoint it sealed.
    sealed = worker.result["checkpoints_sealed"]
    assert sealed[0] == requested.checkpoint_id
    assert sum(operations.checkpoint(n).line_count for n in sealed) == worker.result["lines"]
    assert not operations.worker_is_live()  # the lease is released


@pytest.mark.timeout(60)
def test_stops_by_itself_when_run_for_is_up(config: Path, workers: list[WorkerThread]) -> None:
    started = time.monotonic()
    worker = start_worker(workers, config, run_for=1.5)

    worker.join(timeout=30)
    elapsed = time.monotonic() - started

    assert worker.result is not None
    assert worker.result["stopped_by"] == "run_for"
    assert worker.result["lines"] == 10
    assert len(worker.result["checkpoints_sealed"]) == 1
    # run_for counts from before the collector starts (its own seconds count from later).
    assert elapsed >= 1.5 and 0 < worker.result["seconds"] <= elapsed
    assert not PipelineOperations(config).worker_is_live()


class EarlyWakingEvent(threading.Event):
    """An event whose first long timed wait ends at once, unset: what a wait timed on the
    system clock does when that clock steps forward (Python 3.10's lock waits)."""

    def __init__(self) -> None:
        super().__init__()
        self._woke_early = False

    def wait(self, timeout: float | None = None) -> bool:
        if timeout is not None and timeout >= 1.0 and not self._woke_early:
            self._woke_early = True
            return self.is_set()
        return super().wait(timeout)


@pytest.mark.timeout(60)
def test_run_for_is_kept_when_a_timed_wait_ends_early(
    config: Path, workers: list[WorkerThread], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(threading, "Event", EarlyWakingEvent)
    started = time.monotonic()
    worker = start_worker(workers, config, run_for=1.5)

    worker.join(timeout=30)

    assert worker.result is not None
    assert worker.result["stopped_by"] == "run_for"
    assert worker.result["seconds"] >= 1.5
    assert time.monotonic() - started >= 1.5


@pytest.mark.timeout(60)
def test_waits_for_a_dead_worker_lease_to_expire_then_resumes(
    config: Path, metastore_url: str, workers: list[WorkerThread]
) -> None:
    # A worker killed without warning left its lease (3 s) and sealed nothing.
    store = Metastore.open(metastore_url)
    try:
        assert store.acquire_lease("web_access", "test-host", "killed-worker:1:abc", 3)
    finally:
        store.close()
    started = time.monotonic()

    worker = start_worker(workers, config, run_for=1.0, lease_wait=20)
    worker.join(timeout=40)

    assert time.monotonic() - started >= 2.5
    assert worker.result is not None
    assert worker.result["lines"] == 10


@pytest.mark.timeout(60)
def test_fails_when_another_collector_keeps_the_lease(
    config: Path, metastore_url: str, workers: list[WorkerThread]
) -> None:
    store = Metastore.open(metastore_url)
    try:
        assert store.acquire_lease("web_access", "test-host", "sluice-collect:1:abc", 60)
        worker = start_worker(workers, config, run_for=1.0, lease_wait=1.5)
        with pytest.raises(AirflowException, match="still holds the lease"):
            worker.join(timeout=30)
    finally:
        store.release_lease("web_access", "test-host", "sluice-collect:1:abc")
        store.close()


@pytest.mark.timeout(60)
def test_collects_as_the_host_it_is_given(config: Path, workers: list[WorkerThread]) -> None:
    as_web_1 = PipelineOperations(config, host="web-1")
    worker = start_worker(workers, config, run_for=timedelta(minutes=5), host="web-1")
    wait_until(as_web_1.worker_is_live, 30, "the worker to take web-1's lease")
    assert not PipelineOperations(config).worker_is_live()  # the config's test-host is free

    requested = as_web_1.request_checkpoint(run_id="scheduled-1")
    wait_until(
        lambda: as_web_1.checkpoint(requested.checkpoint_id).state == CheckpointState.SEALED,
        30,
        "the worker to seal the requested checkpoint",
    )
    worker.operator.on_kill()
    worker.join(timeout=15)

    assert as_web_1.checkpoint(requested.checkpoint_id).hosts == ("web-1",)
    assert worker.result is not None
    assert worker.result["host"] == "web-1"
    assert worker.result["lines"] == 10
