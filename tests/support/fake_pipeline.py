"""An in-memory stand-in for ``PipelineOperations`` and a minimal Airflow task context.

``FakePipeline`` is the scripted state of one pipeline (checkpoints, the worker lease, the
landing spec); the ``fake_pipeline`` fixture installs it in place of
``pipeline_core.operations.PipelineOperations``, so every ``PipelineOperations(config_path)``
the code under test creates is a ``FakePipelineOperations`` view of that state. Each call is
recorded in ``FakePipeline.calls``; ``FakePipeline.opened`` lists the config paths opened.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, cast

import pytest

import pipeline_core.operations as operations
from pipeline_core.errors import CollectorBusyError
from pipeline_core.lake import LandingMode
from pipeline_core.operations import (
    CheckpointInfo,
    CheckpointState,
    CollectReport,
    SparkJobSpec,
)

if TYPE_CHECKING:
    from airflow.sdk import Context

NOW = datetime(2026, 11, 22, 10, 0, tzinfo=timezone.utc)


@dataclass
class FakePipeline:
    """Scripted state shared by every ``FakePipelineOperations`` of one test."""

    name: str = "web_access"
    staging_root: Path = Path("/staging")
    lake: Path = Path("/lake")
    worker_live: bool = False
    lines_per_collect: int = 10
    landing: dict[str, object] = field(
        default_factory=lambda: {
            "rows": {"access": 9},
            "rejects": {"no_match": 1},
            "snapshots": {"access": 7001, "_rejects": 7002},
        }
    )
    """What a commit records as landed: rows per source table, rejects per reason, each
    table's snapshot."""
    nothing_to_land: set[int] = field(default_factory=set)
    """Checkpoints ``landing_job`` leaves out (committed ones whose staging was removed)."""
    checkpoints: dict[int, CheckpointInfo] = field(default_factory=dict)
    state_script: dict[int, list[CheckpointState]] = field(default_factory=dict)
    """States that successive ``checkpoint(n)`` calls report (the last one sticks)."""
    lapsed_hosts: dict[int, tuple[str, ...]] = field(default_factory=dict)
    """Hosts a checkpoint waits for whose lease has lapsed: the next ``excuse_lapsed_hosts``
    excuses them and seals it (as when every other host has sealed its batch)."""
    calls: list[tuple[Any, ...]] = field(default_factory=list)
    opened: list[str] = field(default_factory=list)

    def open(self, config_path: str | Path, **options: Any) -> FakePipelineOperations:
        """What ``PipelineOperations(config_path, **options)`` gives (the options are ignored)."""
        self.opened.append(str(config_path))
        return FakePipelineOperations(self, str(config_path))

    def add_checkpoint(
        self, state: CheckpointState = CheckpointState.REQUESTED, run_id: str | None = None
    ) -> CheckpointInfo:
        checkpoint_id = len(self.checkpoints) + 1
        info = CheckpointInfo(
            checkpoint_id=checkpoint_id,
            pipeline=self.name,
            state=state,
            run_id=run_id,
            staging_dir=self.staging_root / self.name / f"{checkpoint_id:08d}",
            line_count=0,
            byte_count=0,
            batch_ids=(),
            requested_at=NOW,
            sealed_at=None,
            committed_at=None,
        )
        self.checkpoints[checkpoint_id] = info
        return info

    def set_state(self, checkpoint_id: int, state: CheckpointState, **changes: Any) -> None:
        info = self.checkpoints[checkpoint_id]
        self.checkpoints[checkpoint_id] = replace(info, state=state, **changes)


class FakePipelineOperations:
    """Has the signatures of ``PipelineOperations``; answers from a ``FakePipeline``."""

    def __init__(self, pipeline: FakePipeline, config_path: str) -> None:
        self.pipeline = pipeline
        self.config_path = config_path

    @property
    def config(self) -> SimpleNamespace:
        """What the operators read of the config: the name and the lake's root."""
        return SimpleNamespace(name=self.pipeline.name, lake_warehouse=self.pipeline.lake)

    def request_checkpoint(
        self,
        run_id: str | None = None,
        data_interval: tuple[datetime, datetime] | None = None,
    ) -> CheckpointInfo:
        self.pipeline.calls.append(("request_checkpoint", run_id, data_interval))
        for info in self.pipeline.checkpoints.values():
            if run_id is not None and info.run_id == run_id:
                return info
        return self.pipeline.add_checkpoint(run_id=run_id)

    def worker_is_live(self) -> bool:
        self.pipeline.calls.append(("worker_is_live",))
        return self.pipeline.worker_live

    def collect_once(self) -> CollectReport:
        self.pipeline.calls.append(("collect_once",))
        if self.pipeline.worker_live:
            raise CollectorBusyError("a collector worker holds the lease")
        sealed = []
        for checkpoint_id, info in list(self.pipeline.checkpoints.items()):
            if info.state == CheckpointState.REQUESTED:
                self.pipeline.set_state(
                    checkpoint_id,
                    CheckpointState.SEALED,
                    line_count=self.pipeline.lines_per_collect,
                    byte_count=100 * self.pipeline.lines_per_collect,
                    sealed_at=NOW,
                )
                sealed.append(self.pipeline.checkpoints[checkpoint_id])
        lines = self.pipeline.lines_per_collect
        return CollectReport(tuple(sealed), files=1, lines=lines, bytes=100 * lines, seconds=0.01)

    def checkpoint(self, checkpoint_id: int) -> CheckpointInfo:
        self.pipeline.calls.append(("checkpoint", checkpoint_id))
        script = self.pipeline.state_script.get(checkpoint_id)
        if script:
            state = script.pop(0) if len(script) > 1 else script[0]
            self.pipeline.set_state(checkpoint_id, state)
        return self.pipeline.checkpoints[checkpoint_id]

    def excuse_lapsed_hosts(self, checkpoint_id: int) -> tuple[str, ...]:
        """Excuse ``FakePipeline.lapsed_hosts[checkpoint_id]`` once, sealing the checkpoint."""
        self.pipeline.calls.append(("excuse_lapsed_hosts", checkpoint_id))
        excused = self.pipeline.lapsed_hosts.pop(checkpoint_id, ())
        if excused:
            self.pipeline.set_state(checkpoint_id, CheckpointState.SEALED, sealed_at=NOW)
        return excused

    def landing_job(
        self,
        checkpoint_ids: Sequence[int],
        landing_id: str,
        mode: LandingMode = LandingMode.APPEND,
    ) -> SparkJobSpec | None:
        """The spec of one job landing ``checkpoint_ids`` but those in
        ``FakePipeline.nothing_to_land``; None when none is left."""
        ids = list(checkpoint_ids)
        self.pipeline.calls.append(("landing_job", ids, landing_id, mode))
        left = [i for i in ids if i not in self.pipeline.nothing_to_land]
        if not left:
            return None
        span = str(left[0]) if len(left) == 1 else f"{min(left)}-{max(left)}"
        arguments = []
        for checkpoint_id in left:
            arguments += ["--checkpoint", str(self.pipeline.checkpoints[checkpoint_id].staging_dir)]
        return SparkJobSpec(
            application="/repo/spark_jobs/land.py",
            application_args=[
                *arguments,
                "--lake",
                str(self.pipeline.lake),
                "--namespace",
                self.pipeline.name,
                "--landing-id",
                landing_id,
                "--mode",
                mode.value,
            ],
            name=f"sluice-land-{self.pipeline.name}-{span}",
            conf={"spark.sql.session.timeZone": "UTC"},
            env_vars={"PYSPARK_PYTHON": "/venv/bin/python"},
            py_files="/repo/dist/pipeline_core.zip",
        )

    def commit(self, checkpoint_ids: Sequence[int]) -> list[CheckpointInfo]:
        ids = list(checkpoint_ids)
        self.pipeline.calls.append(("commit", ids))
        for checkpoint_id in ids:
            self.pipeline.set_state(
                checkpoint_id,
                CheckpointState.COMMITTED,
                committed_at=NOW,
                landing=dict(self.pipeline.landing),
            )
        return [self.pipeline.checkpoints[checkpoint_id] for checkpoint_id in ids]

    def pending_landings(self) -> list[CheckpointInfo]:
        self.pipeline.calls.append(("pending_landings",))
        return [
            info
            for info in self.pipeline.checkpoints.values()
            if info.state == CheckpointState.SEALED
        ]


@pytest.fixture
def fake_pipeline(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakePipeline]:
    """A ``FakePipeline`` that every ``PipelineOperations(...)`` created by the test uses."""
    pipeline = FakePipeline()
    monkeypatch.setattr(operations, "PipelineOperations", pipeline.open)
    yield pipeline


@dataclass
class FakeTaskInstance:
    """The part of Airflow's runtime task instance that Sluice's operators use."""

    xcoms: dict[tuple[str, str], Any] = field(default_factory=dict)
    pushed: dict[str, Any] = field(default_factory=dict)

    def xcom_push(self, key: str, value: Any) -> None:
        self.pushed[key] = value

    def xcom_pull(self, task_ids: str | None = None, key: str = "return_value", **_: Any) -> Any:
        return self.xcoms.get((task_ids or "", key))

    def get_first_reschedule_date(self, context: Any) -> datetime | None:
        return None


def make_context(
    ti: FakeTaskInstance | None = None,
    run_id: str = "scheduled__2026-11-22T10:00:00+00:00",
    data_interval: tuple[datetime, datetime] | None = (NOW, NOW),
    **extra: Any,
) -> Context:
    """A task context with what Sluice's operators read (``run_id``, data interval, ``ti``)."""
    task_instance = ti or FakeTaskInstance()
    context = {
        "run_id": run_id,
        "data_interval_start": data_interval[0] if data_interval else None,
        "data_interval_end": data_interval[1] if data_interval else None,
        "ti": task_instance,
        "task_instance": task_instance,
    }
    return cast("Context", context | extra)
