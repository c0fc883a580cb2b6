"""CheckpointSealedTrigger: wait in the triggerer until a checkpoint is sealed (or failed)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from airflow.triggers.base import BaseTrigger, TriggerEvent

from sluice_airflow.hooks.sluice import SluiceHook

if TYPE_CHECKING:
    from pipeline_core.operations import CheckpointInfo, PipelineOperations
    from pipeline_core.runs import SealLook

SEALED = "sealed"
"""Event status: the checkpoint is SEALED or COMMITTED; its batches can be landed."""
FAILED = "failed"
"""Event status: the checkpoint is FAILED and will never be sealed or landed; ``reason`` is the
error stored with it."""
ERROR = "error"
"""Event status: the checkpoint cannot be watched (unknown id, broken config); ``reason``."""


class CheckpointSealedTrigger(BaseTrigger):
    """Fire once checkpoint N of a pipeline is sealed, or once it has failed.

    Looks at the checkpoint every ``poll_interval`` seconds with
    ``pipeline_core.runs.look_sealed``, which also stops waiting for hosts whose collector
    lease has lapsed (a dead host), so the checkpoint is sealed with the live hosts' batches
    within ``collector.lease_seconds`` of a host's death. The metastore's client is
    synchronous, so every query runs in a worker thread (``asyncio.to_thread``) and the
    triggerer's event loop never blocks; one metastore connection pool is opened for the
    trigger's life and closed when it ends or is cancelled. A metastore that cannot be reached
    for a moment is logged and polled again.

    Yields exactly one :class:`TriggerEvent` whose payload is ``{"status", "checkpoint_id",
    "pipeline", "state", "reason"}``: ``status`` is ``"sealed"`` (state ``sealed`` or
    ``committed``), ``"failed"`` (state ``failed``, ``reason`` from the metastore) or
    ``"error"`` (the checkpoint or the config cannot be read; ``reason`` is the error).

    :param config_path: the pipeline's config file.
    :param checkpoint_id: the checkpoint to wait for.
    :param poll_interval: seconds between two looks at the metastore.
    """

    def __init__(self, *, config_path: str, checkpoint_id: int, poll_interval: float = 5.0):
        super().__init__()  # type: ignore[no-untyped-call]
        self.config_path = config_path
        self.checkpoint_id = int(checkpoint_id)
        self.poll_interval = float(poll_interval)

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (
            f"{type(self).__module__}.{type(self).__qualname__}",
            {
                "config_path": self.config_path,
                "checkpoint_id": self.checkpoint_id,
                "poll_interval": self.poll_interval,
            },
        )

    async def run(self) -> AsyncIterator[TriggerEvent]:
        from pipeline_core.errors import CheckpointError, ConfigError, MetastoreError
        from pipeline_core.runs import SealWait, look_sealed

        hook = SluiceHook(config_path=self.config_path)
        try:
            operations: PipelineOperations = await asyncio.to_thread(hook.get_conn)
            await asyncio.to_thread(operations.context.hold)  # one metastore for every look
        except (ConfigError, MetastoreError, ValueError) as exc:
            yield self._event(ERROR, reason=str(exc))
            return
        try:
            while True:
                try:
                    look: SealLook = await asyncio.to_thread(
                        look_sealed, operations, self.checkpoint_id
                    )
                except CheckpointError as exc:
                    yield self._event(ERROR, reason=str(exc))
                    return
                except MetastoreError as exc:
                    self.log.warning("Checkpoint %d: %s; polling again", self.checkpoint_id, exc)
                else:
                    info = look.checkpoint
                    if look.wait is SealWait.LANDABLE:
                        yield self._event(SEALED, info)
                        return
                    if look.wait is SealWait.FAILED:
                        reason = info.error or "no error was recorded"
                        yield self._event(FAILED, info, reason=reason)
                        return
                    self.log.info("Checkpoint %d is %s", self.checkpoint_id, info.state.value)
                await asyncio.sleep(self.poll_interval)
        finally:
            operations.context.release()

    def _event(
        self, status: str, info: CheckpointInfo | None = None, *, reason: str | None = None
    ) -> TriggerEvent:
        return TriggerEvent(  # type: ignore[no-untyped-call]
            {
                "status": status,
                "checkpoint_id": self.checkpoint_id,
                "pipeline": info.pipeline if info is not None else None,
                "state": info.state.value if info is not None else None,
                "reason": reason,
            }
        )
