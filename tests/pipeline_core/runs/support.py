"""``StubPipeline``: an in-memory pipeline with what carrying out a run plan asks of one."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta, timezone
from pathlib import Path

from pipeline_core.errors import CheckpointError, CollectorBusyError
from pipeline_core.operations import CheckpointInfo, CheckpointState, CollectReport

T0 = datetime(2026, 11, 22, 10, 0, tzinfo=timezone.utc)
INTERVAL = (T0, T0 + timedelta(minutes=5))


@dataclass
class StubPipeline:
    """Checkpoints, the collector lease and a record of every call (``RunOperations``).

    ``lease_held``: a collector worker holds the lease, so ``worker_is_live`` is true and
    ``collect_once`` raises ``CollectorBusyError``. ``lease_taken_before_collect``: a worker
    takes the lease between ``worker_is_live`` (false) and ``collect_once`` (busy).
    """

    lease_held: bool = False
    lease_taken_before_collect: bool = False
    checkpoints: dict[int, CheckpointInfo] = field(default_factory=dict)
    interval_starts: dict[int, datetime | None] = field(default_factory=dict)
    calls: list[tuple[object, ...]] = field(default_factory=list)

    def add(
        self,
        state: CheckpointState = CheckpointState.REQUESTED,
        *,
        run_id: str | None = None,
        interval_start: datetime | None = T0,
    ) -> CheckpointInfo:
        checkpoint_id = len(self.checkpoints) + 1
        info = CheckpointInfo(
            checkpoint_id=checkpoint_id,
            pipeline="web_access",
            state=state,
            run_id=run_id,
            staging_dir=Path("/staging/web_access") / f"{checkpoint_id:08d}",
            line_count=0,
            byte_count=0,
            batch_ids=(),
            requested_at=T0,
            sealed_at=None,
            committed_at=None,
        )
        self.checkpoints[checkpoint_id] = info
        self.interval_starts[checkpoint_id] = interval_start
        return info

    def states(self) -> dict[int, CheckpointState]:
        return {checkpoint_id: info.state for checkpoint_id, info in self.checkpoints.items()}

    def call_names(self) -> list[object]:
        return [call[0] for call in self.calls]

    # -- RunOperations -----------------------------------------------------------------------

    def request_checkpoint(
        self,
        run_id: str | None = None,
        data_interval: tuple[datetime, datetime] | None = None,
    ) -> CheckpointInfo:
        self.calls.append(("request_checkpoint", run_id, data_interval))
        for info in self.checkpoints.values():
            if run_id is not None and info.run_id == run_id:
                return info
        start = data_interval[0] if data_interval else None
        return self.add(run_id=run_id, interval_start=start)

    def landable(self, checkpoint_id: int) -> CheckpointInfo:
        self.calls.append(("landable", checkpoint_id))
        info = self.checkpoints.get(checkpoint_id)
        if info is None:
            raise CheckpointError(f"there is no checkpoint {checkpoint_id}")
        info.state.check_landable(checkpoint_id, info.error)
        return info

    def pending_landings(self) -> list[CheckpointInfo]:
        self.calls.append(("pending_landings",))
        return [info for info in self.checkpoints.values() if info.state is CheckpointState.SEALED]

    def checkpoints_in_interval(self, start: datetime, end: datetime) -> list[CheckpointInfo]:
        self.calls.append(("checkpoints_in_interval", start, end))
        return [
            info
            for checkpoint_id, info in self.checkpoints.items()
            if info.state.landable
            and (begins := self.interval_starts[checkpoint_id]) is not None
            and start <= begins < end
        ]

    def worker_is_live(self) -> bool:
        self.calls.append(("worker_is_live",))
        return self.lease_held

    def collect_once(self) -> CollectReport:
        self.calls.append(("collect_once",))
        if self.lease_held or self.lease_taken_before_collect:
            raise CollectorBusyError("a collector worker holds the lease")
        sealed = []
        for checkpoint_id, info in list(self.checkpoints.items()):
            if info.state is CheckpointState.REQUESTED:
                self.checkpoints[checkpoint_id] = replace(info, state=CheckpointState.SEALED)
                sealed.append(self.checkpoints[checkpoint_id])
        return CollectReport(tuple(sealed), files=1, lines=5, bytes=500, seconds=0.01)
