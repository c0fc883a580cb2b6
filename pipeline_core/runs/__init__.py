"""What one pipeline DAG run lands: the run-mode decision and how it is carried out.

Two steps, each with one owner::

    run (mode param, backfill?, run id, data interval, checkpoint_id param)
      └─► plan_run(...) ─► RunPlan          pure: reads nothing, writes nothing
            └─► execute_plan(plan, operations) ─► PlanResult
                  request / find the checkpoints, collect if the plan says so

The decision table (:func:`plan_run`):

==========================  =========  ======================  ==========  ================
run                         selection  collect                 earlier     returns
==========================  =========  ======================  ==========  ================
backfill, any mode          INTERVAL   NEVER                   no          list (maybe [])
``normal``                  REQUESTED  IF_IDLE (NEVER without  yes         id, or list with
                                       ``collect_if_idle``)                earlier ones
``force_seal``              REQUESTED  FORCE                   no          id
``reprocess``               NAMED      NEVER                   no          id
``spark_only``              PENDING    NEVER                   no          list (maybe [])
==========================  =========  ======================  ==========  ================

Carrying out the collect step (:func:`execute_plan`), for a ``REQUESTED`` checkpoint only:
one no longer ``requested`` is never collected (``NOT_WAITING``); ``IF_IDLE`` leaves it to a
collector worker holding the lease (``LEFT_TO_WORKER``), else collects in-process; ``FORCE``
collects without asking, and a worker that holds the lease after all still wins
(``CollectorBusyError`` -> ``LEFT_TO_WORKER``). A run whose checkpoint a worker seals waits for
it downstream (the sensor); every other selection is sealed or committed already.

Errors: :class:`RunPlanError` when no plan can do what the run asks (an unknown mode,
``reprocess`` without one valid id or naming a checkpoint that is not sealed or committed, a
backfill run without a data interval); retrying cannot help.

Airflow's ``RequestCheckpointOperator`` reads the task context, calls :func:`plan_run`, has
``SluiceHook`` carry the plan out and pushes :attr:`PlanResult.lands` as its XCom.

Waiting for the checkpoint (:func:`look_sealed`, Airflow's ``CheckpointSealedSensor`` and its
trigger): each look answers a :class:`SealWait`, ``LANDABLE`` (sealed or committed),
``FAILED`` or ``WAITING``; a look at a ``requested`` checkpoint first stops waiting for the
hosts whose collector lease has lapsed (their unsealed lines go into a later checkpoint), so a
dead host holds a run back for at most ``collector.lease_seconds``.
"""

from pipeline_core.runs._checkpoint_ids import (
    names_one_checkpoint,
    parse_checkpoint_id,
    parse_checkpoint_ids,
)
from pipeline_core.runs._execution import Collection, PlanResult, RunOperations, execute_plan
from pipeline_core.runs._plan import (
    CollectPolicy,
    RunMode,
    RunPlan,
    RunPlanError,
    Selection,
    parse_run_mode,
    plan_run,
)
from pipeline_core.runs._seal_wait import SealLook, SealOperations, SealWait, look_sealed
from pipeline_core.runs._summary import (
    INTERVAL_KEY_FORMAT,
    commit_summary,
    interval_key,
    interval_keys,
    run_note,
)

__all__ = [
    "INTERVAL_KEY_FORMAT",
    "CollectPolicy",
    "Collection",
    "PlanResult",
    "RunMode",
    "RunOperations",
    "RunPlan",
    "RunPlanError",
    "SealLook",
    "SealOperations",
    "SealWait",
    "Selection",
    "commit_summary",
    "execute_plan",
    "interval_key",
    "interval_keys",
    "look_sealed",
    "names_one_checkpoint",
    "parse_checkpoint_id",
    "parse_checkpoint_ids",
    "parse_run_mode",
    "plan_run",
    "run_note",
]
