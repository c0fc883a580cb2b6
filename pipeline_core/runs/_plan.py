"""The run-mode decision: what one pipeline DAG run lands, as a :class:`RunPlan`.

:func:`plan_run` is a pure function of plain values (the mode, whether the run is a backfill,
its run id, data interval and ``checkpoint_id`` param): it reads nothing and writes nothing.
What it decides is carried out by :func:`pipeline_core.runs.execute_plan`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from pipeline_core._compat import StrEnum
from pipeline_core.errors import SluiceError
from pipeline_core.runs._checkpoint_ids import parse_checkpoint_ids


class RunPlanError(SluiceError):
    """A run asks for what no plan can do, so retrying cannot help.

    An unknown mode, ``reprocess`` without one valid checkpoint id or naming a checkpoint that
    is not sealed or committed, a backfill run without a data interval. Airflow fails the task
    at once, without retries.
    """


class RunMode(StrEnum):
    """What a pipeline DAG run does; the ``mode`` param of a manually triggered run."""

    NORMAL = "normal"
    """Request this run's checkpoint, have it sealed (in-process or by a live worker), land it,
    commit it. Scheduled runs always do this."""
    REPROCESS = "reprocess"
    """Land the sealed or committed checkpoint ``checkpoint_id`` again (its lake output is
    replaced) and commit it; nothing is collected."""
    SPARK_ONLY = "spark_only"
    """Land and commit every sealed checkpoint not committed yet; nothing is collected."""
    FORCE_SEAL = "force_seal"
    """Like ``normal``, but collect and seal in this task even when ``collect_if_idle`` is off
    or a worker looks live; if a worker does hold the lease, the request waits for it."""


class Selection(StrEnum):
    """Which checkpoints a run lands."""

    REQUESTED = "requested"
    """The run's own checkpoint, requested for its run id and data interval (a retried task
    gets the same one)."""
    NAMED = "named"
    """The sealed or committed checkpoint the ``checkpoint_id`` param names."""
    PENDING = "pending"
    """Every sealed checkpoint not committed yet, oldest first."""
    INTERVAL = "interval"
    """The sealed or committed checkpoints of the run's data interval, oldest first."""


class CollectPolicy(StrEnum):
    """Whether the run collects and seals its requested checkpoint itself."""

    NEVER = "never"
    """Collect nothing: a collector worker seals the checkpoint, or it is sealed already."""
    IF_IDLE = "if_idle"
    """Collect in this process unless a collector worker holds the pipeline's lease."""
    FORCE = "force"
    """Collect in this process without asking first; a worker holding the lease still wins
    (one collector per host reads a pipeline's files) and seals the checkpoint instead."""


@dataclass(frozen=True)
class RunPlan:
    """What one run lands and how: the decision of :func:`plan_run`.

    :raises ValueError: a selection without what it needs (``NAMED`` without
        ``checkpoint_id``, ``INTERVAL`` without ``data_interval``), or a collect policy other
        than ``NEVER`` for a selection that requests nothing.
    """

    mode: RunMode
    """The mode the run asked for (a backfill run ignores it)."""
    selection: Selection
    collect: CollectPolicy = CollectPolicy.NEVER
    """For ``REQUESTED``: whether the run collects and seals its checkpoint itself."""
    run_id: str | None = None
    """For ``REQUESTED``: the run the checkpoint is requested for."""
    data_interval: tuple[datetime, datetime] | None = None
    """For ``REQUESTED``: recorded with the checkpoint; for ``INTERVAL``: the one to land."""
    checkpoint_id: int | None = None
    """For ``NAMED``: the checkpoint to land again."""
    land_earlier_sealed: bool = False
    """For ``REQUESTED``: land earlier checkpoints sealed but not committed along with it
    (those a collector worker sealed as it stopped belong to no run)."""

    @property
    def replaces_landed(self) -> bool:
        """Whether the run replaces what the lake holds of its checkpoints (reprocess and
        backfill) rather than leaving out what it holds already."""
        return self.selection in (Selection.NAMED, Selection.INTERVAL)

    def __post_init__(self) -> None:
        if self.selection is Selection.NAMED and self.checkpoint_id is None:
            raise ValueError("a plan landing a named checkpoint needs its checkpoint_id")
        if self.selection is Selection.INTERVAL and self.data_interval is None:
            raise ValueError("a plan landing an interval needs its data_interval")
        if self.selection is not Selection.REQUESTED and self.collect is not CollectPolicy.NEVER:
            raise ValueError(f"a plan landing {self.selection.value} checkpoints collects nothing")


def parse_run_mode(value: RunMode | str | None) -> RunMode:
    """The mode a run's ``mode`` param names; ``normal`` when it names none.

    :raises RunPlanError: the value is not a mode.
    """
    try:
        return RunMode(value or RunMode.NORMAL)
    except ValueError:
        choices = ", ".join(mode.value for mode in RunMode)
        raise RunPlanError(f"unknown mode {value!r}; choose one of {choices}") from None


def plan_run(
    mode: RunMode | str | None = None,
    *,
    backfill: bool = False,
    run_id: str | None = None,
    data_interval: tuple[datetime, datetime] | None = None,
    checkpoint_id: int | str | list[int] | tuple[int, ...] | None = None,
    collect_if_idle: bool = True,
) -> RunPlan:
    """Decide what a run lands (the table in :mod:`pipeline_core.runs`). Reads nothing.

    :param mode: the run's ``mode`` param (``None`` or empty: ``normal``).
    :param backfill: the run was made by a backfill; it re-lands its interval whatever the mode.
    :param run_id: the run's id, for the checkpoint it requests.
    :param data_interval: the run's data interval, if it has one.
    :param checkpoint_id: the run's ``checkpoint_id`` param; only ``reprocess`` reads it.
    :param collect_if_idle: in ``normal`` runs, collect in-process when no worker holds the
        lease (``force_seal`` collects whatever this says).
    :raises RunPlanError: an unknown mode; ``reprocess`` without exactly one valid checkpoint
        id; a backfill run without a data interval.
    """
    run_mode = parse_run_mode(mode)
    if backfill:
        if data_interval is None:
            raise RunPlanError("a backfill run without a data interval lands nothing")
        return RunPlan(run_mode, Selection.INTERVAL, data_interval=data_interval)
    if run_mode is RunMode.SPARK_ONLY:
        return RunPlan(run_mode, Selection.PENDING)
    if run_mode is RunMode.REPROCESS:
        return RunPlan(run_mode, Selection.NAMED, checkpoint_id=_reprocess_target(checkpoint_id))
    if run_mode is RunMode.FORCE_SEAL:
        collect = CollectPolicy.FORCE
    else:
        collect = CollectPolicy.IF_IDLE if collect_if_idle else CollectPolicy.NEVER
    return RunPlan(
        run_mode,
        Selection.REQUESTED,
        collect,
        run_id=run_id,
        data_interval=data_interval,
        land_earlier_sealed=run_mode is RunMode.NORMAL,
    )


def _reprocess_target(requested: int | str | list[int] | tuple[int, ...] | None) -> int:
    if requested is None or requested == "":
        raise RunPlanError("mode reprocess needs the checkpoint_id param")
    try:
        ids = parse_checkpoint_ids(requested)
        if len(ids) != 1:
            raise ValueError(f"one checkpoint id is needed, got {requested!r}")
    except ValueError as exc:
        raise RunPlanError(f"cannot reprocess: {exc}") from exc
    return ids[0]
