"""CheckpointSealedSensor: wait until a checkpoint's batch is sealed and ready to land."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from airflow.providers.common.compat.sdk import conf
from airflow.sdk import BaseSensorOperator
from airflow.sdk.exceptions import AirflowException, AirflowFailException, AirflowSkipException

from sluice_airflow.hooks.sluice import SluiceHook
from sluice_airflow.triggers.sluice import FAILED, SEALED, CheckpointSealedTrigger

if TYPE_CHECKING:
    from airflow.sdk import Context


class CheckpointNeverSealedError(AirflowFailException):
    """The checkpoint the sensor waits for is FAILED: it will never be sealed or landed.

    Derives from ``AirflowFailException``, so the task fails at once without retries (or is
    skipped with ``soft_fail``), instead of poking until the timeout.
    """


class CheckpointSealedSensor(BaseSensorOperator):
    """Succeed once checkpoint N is SEALED (or already COMMITTED); fail if it is FAILED.

    ``checkpoint_id`` may also be a list of checkpoints (what the request task returns for a
    ``spark_only`` or backfill run): the sensor then waits for all of them, and an empty list
    succeeds at once.

    Each look is ``pipeline_core.runs.look_sealed``: a checkpoint still waiting for a host
    whose collector lease has lapsed (a dead host) stops waiting for it and is sealed with the
    live hosts' batches, so a dead host holds the run back for ``collector.lease_seconds`` at
    most; its unsealed lines go into a later checkpoint when it is back.

    Deferrable (Airflow's ``[operators] default_deferrable`` by default): the sensor looks
    once, and if N is not sealed yet it hands the wait to
    :class:`~sluice_airflow.triggers.sluice.CheckpointSealedTrigger` in Airflow's triggerer,
    freeing its worker slot (``dag.test()`` runs the trigger in-process). With
    ``deferrable=False`` it pokes in ``mode="poke"`` (the default, holding a worker slot
    between pokes) or ``mode="reschedule"`` (freeing it); use that where no triggerer runs.

    :param config_path: the pipeline's config file. (templated)
    :param checkpoint_id: the checkpoint, usually
        ``"{{ ti.xcom_pull(task_ids='request_checkpoint') }}"``; or a list of them. (templated)
    :param poke_interval: seconds (or a ``timedelta``) between pokes, and between the
        trigger's looks at the metastore; 5 s by default.
    :param deferrable: wait in the triggerer instead of a worker slot; by default what
        Airflow's ``[operators] default_deferrable`` says
        (``AIRFLOW__OPERATORS__DEFAULT_DEFERRABLE``), false when unset, as for Airflow's own
        deferrable sensors.
    """

    template_fields: Sequence[str] = ("config_path", "checkpoint_id")
    ui_color = "#f0f0fa"

    def __init__(
        self,
        *,
        config_path: str,
        checkpoint_id: int | str | list[int],
        poke_interval: timedelta | float = 5.0,
        deferrable: bool = conf.getboolean("operators", "default_deferrable", fallback=False),
        **kwargs: Any,
    ) -> None:
        super().__init__(poke_interval=poke_interval, **kwargs)
        self.config_path = config_path
        self.checkpoint_id = checkpoint_id
        self.deferrable = deferrable

    def poke(self, context: Context) -> bool:
        return self._first_unsealed() is None

    def execute(self, context: Context) -> Any:
        if not self.deferrable:
            return super().execute(context)
        self._done_or_defer()
        return None

    def execute_complete(self, context: Context, event: dict[str, Any] | None = None) -> None:
        """Resume after the trigger fired: fail on a failed checkpoint, else look again."""
        event = event or {}
        checkpoint_id = event.get("checkpoint_id")
        if event.get("status") == FAILED:
            raise CheckpointNeverSealedError(
                f"checkpoint {checkpoint_id} of pipeline {event.get('pipeline')} failed; it "
                f"will not be sealed or landed: {event.get('reason')}"
            )
        if event.get("status") != SEALED:
            raise AirflowException(
                f"cannot wait for checkpoint {checkpoint_id}: {event.get('reason') or event}"
            )
        self.log.info("Checkpoint %s is %s", checkpoint_id, event.get("state"))
        self._done_or_defer()

    def _done_or_defer(self) -> None:
        try:
            pending = self._first_unsealed()
        except AirflowFailException as exc:
            if self.soft_fail or self.never_fail:
                raise AirflowSkipException(f"Skipping: {exc}") from exc
            raise
        if pending is None:
            self.log.info("Success criteria met. Exiting.")
            return
        self.log.info("Deferring until checkpoint %d is sealed", pending)
        self.defer(
            trigger=CheckpointSealedTrigger(
                config_path=self.config_path,
                checkpoint_id=pending,
                poll_interval=self.poke_interval,
            ),
            method_name="execute_complete",
            timeout=timedelta(seconds=self.timeout),
        )

    def _first_unsealed(self) -> int | None:
        """The first checkpoint not sealed yet (``None`` when all are); raises on a failed one."""
        from pipeline_core.runs import SealWait, look_sealed, parse_checkpoint_ids

        operations = SluiceHook(config_path=self.config_path).operations
        for checkpoint_id in parse_checkpoint_ids(self.checkpoint_id):
            look = look_sealed(operations, checkpoint_id)
            info = look.checkpoint
            if look.wait is SealWait.FAILED:
                reason = f": {info.error}" if info.error else " (no error was recorded)"
                raise CheckpointNeverSealedError(
                    f"checkpoint {checkpoint_id} of pipeline {info.pipeline} failed; it will not "
                    f"be sealed or landed{reason}"
                )
            self.log.info("Checkpoint %d is %s", checkpoint_id, info.state.value)
            if look.wait is SealWait.WAITING:
                return checkpoint_id
        return None
