"""CheckpointSealedSensor: wait until a checkpoint's batch is sealed and ready to land."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseSensorOperator
from airflow.sdk.exceptions import AirflowFailException

from sluice_airflow.hooks.sluice import SluiceHook, parse_checkpoint_id

if TYPE_CHECKING:
    from airflow.sdk import Context


class CheckpointFailedError(AirflowFailException):
    """The checkpoint the sensor waits for is FAILED: it will never be sealed.

    Derives from ``AirflowFailException``, so the task fails at once without retries (or is
    skipped with ``soft_fail``), instead of poking until the timeout.
    """


class CheckpointSealedSensor(BaseSensorOperator):
    """Succeed once checkpoint N is SEALED (or already COMMITTED); fail if it is FAILED.

    Pokes ``SluiceHook.checkpoint(N).state``. Works in ``mode="poke"`` (the default, holding a
    worker slot between pokes) and ``mode="reschedule"`` (freeing it). A deferrable variant
    comes later.

    :param config_path: the pipeline's config file. (templated)
    :param checkpoint_id: the checkpoint, usually
        ``"{{ ti.xcom_pull(task_ids='request_checkpoint') }}"``. (templated)
    :param poke_interval: seconds (or a ``timedelta``) between pokes; 5 s by default.
    """

    template_fields: Sequence[str] = ("config_path", "checkpoint_id")
    ui_color = "#f0f0fa"

    def __init__(
        self,
        *,
        config_path: str,
        checkpoint_id: int | str,
        poke_interval: timedelta | float = 5.0,
        **kwargs: Any,
    ) -> None:
        super().__init__(poke_interval=poke_interval, **kwargs)
        self.config_path = config_path
        self.checkpoint_id = checkpoint_id

    def poke(self, context: Context) -> bool:
        from pipeline_core.operations import CheckpointState

        checkpoint_id = parse_checkpoint_id(self.checkpoint_id)
        info = SluiceHook(config_path=self.config_path).checkpoint(checkpoint_id)
        if info.state == CheckpointState.FAILED:
            raise CheckpointFailedError(
                f"checkpoint {checkpoint_id} of pipeline {info.pipeline} failed; it will not be "
                "sealed (see the collector's log)"
            )
        self.log.info("Checkpoint %d is %s", checkpoint_id, info.state.value)
        return info.state in (CheckpointState.SEALED, CheckpointState.COMMITTED)
