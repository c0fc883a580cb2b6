"""The DAG factory: Sluice's Airflow DAGs for each pipeline config.

For each ``*.yaml`` config of the pipelines folder (:func:`~sluice_airflow.pipeline_configs.
pipelines_dir`):

* ``sluice_<name>``: each run lands checkpoints of the pipeline into the lake,
  ``request_checkpoint`` >> ``wait_sealed`` >> ``land`` >> ``commit``; which checkpoints
  depends on the run (scheduled, backfill) and its ``mode`` param (manual triggers).
* ``sluice_<name>_worker``: the long-running collector as a continuous DAG (paused when
  created; unpause it to collect continuously instead of once per run).
* ``sluice_<name>_maintenance``: daily compaction of the lake tables, snapshot expiry, orphan
  file and old staging removal (paused when created).

A deployment's DAG file is two lines::

    from sluice_airflow.dag_factory import pipeline_dags

    globals().update(pipeline_dags())

Building reads only each config's ``name`` and ``schedule`` (plain YAML); the tasks validate
the whole config, so a broken config never breaks DAG parsing. A file whose name is not a
valid pipeline name (lower-case letters, digits, ``_``; starting with a letter) is skipped with
a warning.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from airflow.sdk import DAG, Param

from sluice_airflow.operators.maintenance import LakeMaintenanceOperator
from sluice_airflow.operators.sluice import (
    CommitCheckpointOperator,
    LandCheckpointOperator,
    RequestCheckpointOperator,
    RunMode,
)
from sluice_airflow.operators.worker import CollectorWorkerOperator
from sluice_airflow.pipeline_configs import (
    dag_settings,
    lake_asset,
    lake_interval_asset,
    pipeline_configs,
    pipelines_dir,
    timetable,
)
from sluice_airflow.queues import collector_routes, routing_summary
from sluice_airflow.sensors.sluice import CheckpointSealedSensor

CHECKPOINT_ID = "{{ ti.xcom_pull(task_ids='request_checkpoint') }}"
START_DATE = datetime(2025, 1, 1, tzinfo=timezone.utc)
PAUSED_ONE_RUN_AT_A_TIME: dict[str, Any] = {
    "start_date": START_DATE,
    "catchup": False,
    "max_active_runs": 1,
    "is_paused_upon_creation": True,
}
"""What the worker and maintenance DAGs share: paused when created, one run at a time."""
WORKER_RUN_FOR = timedelta(hours=1)
"""How long one worker DAG run collects before it seals, stops and hands over to the next."""

MODE_HELP = {
    RunMode.NORMAL: "request this run's checkpoint, seal it, land it, commit it",
    RunMode.REPROCESS: "land checkpoint_id again (its lake output is replaced) and commit it",
    RunMode.SPARK_ONLY: "land every sealed checkpoint not committed yet; collect nothing",
    RunMode.FORCE_SEAL: "collect and seal now in this run, unless a worker holds the lease",
}


def run_params() -> dict[str, Param]:
    """The trigger form of a pipeline DAG: new ``Param`` objects for each DAG (a DAG run's
    values are resolved on them, so DAGs must never share them)."""
    return {
        "mode": Param(
            RunMode.NORMAL.value,
            type="string",
            enum=[mode.value for mode in RunMode],
            values_display={
                mode.value: f"{mode.value}: {text}" for mode, text in MODE_HELP.items()
            },
            title="Mode",
            description="What this run does. Scheduled runs are always normal; backfill runs "
            "re-land the checkpoints of their interval whatever the mode.",
        ),
        "checkpoint_id": Param(
            None,
            type=["null", "integer"],
            minimum=1,
            title="Checkpoint id",
            description="The sealed or committed checkpoint to land again. Required by reprocess, "
            "ignored by the other modes.",
        ),
    }


DOC_MD = """\
### Sluice pipeline `{name}`

Config: `{config}` · lake asset: `{asset}`

Every run lands checkpoints of the pipeline's logs into the lake, each line exactly once:

1. **request_checkpoint** decides what the run lands (its XCom: one checkpoint id, or a list).
2. **wait_sealed** waits until they are sealed (fails at once if one failed); it defers to
   the triggerer while a collector worker seals.
3. **land** spark-submits `spark_jobs/land.py` once for all of them on the
   `spark_default` connection (`local[*]` unless the connection says otherwise): one Iceberg
   commit per lake table. A retry never duplicates (checkpoints a table holds are left out);
   reprocess and backfill runs replace the checkpoints' rows in that same commit.
4. **commit** reads what the tables hold of them, marks them committed and updates the lake
   asset; its XCom (and the asset event's extra) holds the checkpoint ids, lines, bytes, rows,
   rejects and each table's snapshot.

**Scheduled runs** (and the default **normal** mode) request checkpoint N for the run (a retry
gets the same N) with the run's data interval. *Collection mode:* when no long-running
collector worker holds the pipeline's lease, the task collects every file to its current end
**in-process (one-shot)** and seals N itself; when a worker is live (`sluice_{name}_worker`
unpaused, or `sluice collect`), the worker seals N at its next barrier.

**Trigger with params** (the trigger form) for the other modes:

| mode | what the run does |
|---|---|
{modes}

**Backfill** (`airflow backfill create --dag-id sluice_{name} ...`): each backfill run re-lands
the sealed or committed checkpoints requested for its data interval (or, for checkpoints no
run requested, sealed in it) and collects nothing; an interval without any succeeds empty.
"""

WORKER_DOC_MD = """\
### Sluice collector worker `{name}`

Config: `{config}`

Tails the pipeline's files continuously: each run collects for {hours:g} h, sealing every
checkpoint a `sluice_{name}` run requests as soon as it is requested, then seals what it has
read, releases its lease and ends; the next run starts at once (`@continuous`, one at a time).
While it runs, `sluice_{name}` runs do not collect themselves.

Paused when created: unpause it to switch the pipeline to continuous collection, pause it to
go back to one-shot collection in each DAG run. A worker killed without warning is replaced
by the next run, which waits for the dead worker's lease to expire (`collector.lease_seconds`,
60 s by default) and resumes from the offsets of the last sealed checkpoint. Checkpoints a
worker seals on stop belong to no DAG run: a `spark_only` run of `sluice_{name}` (or
`sluice land`) lands them.
"""


def build_dag(config: Path) -> DAG:
    """The DAG of the pipeline configured by ``config``."""
    name, schedule = dag_settings(config)
    config_path = str(config.resolve())
    asset = lake_asset(name)
    modes = "\n".join(f"| `{mode.value}` | {text} |" for mode, text in MODE_HELP.items())
    with DAG(
        dag_id=f"sluice_{name}",
        description=f"Sluice pipeline {name}: collect, seal, land and commit checkpoints",
        doc_md=DOC_MD.format(name=name, config=config_path, asset=asset.uri, modes=modes),
        schedule=timetable(schedule),
        start_date=START_DATE,
        catchup=False,
        max_active_runs=1,
        dagrun_timeout=timedelta(hours=1),
        tags=["sluice", "logs", "spark"],
        params=run_params(),
        default_args={"retries": 2, "retry_delay": timedelta(seconds=30)},
    ) as dag:
        # Collectors on named hosts (Edge workers) seal the checkpoints; the request task never
        # collects in-process on whatever machine runs it.
        on_hosts = any(route.host is not None for route in collector_routes(config))
        request = RequestCheckpointOperator(
            task_id="request_checkpoint", config_path=config_path, collect_if_idle=not on_hosts
        )
        wait = CheckpointSealedSensor(
            task_id="wait_sealed",
            config_path=config_path,
            checkpoint_id=CHECKPOINT_ID,
            poke_interval=5,
            timeout=timedelta(minutes=30),
        )
        land = LandCheckpointOperator(
            task_id="land",
            config_path=config_path,
            checkpoint_id=CHECKPOINT_ID,
            conn_id="spark_default",
        )
        commit = CommitCheckpointOperator(
            task_id="commit",
            config_path=config_path,
            checkpoint_id=CHECKPOINT_ID,
            outlets=[asset, lake_interval_asset(name)],
        )
        request >> wait >> land >> commit
    return dag


def build_worker_dag(config: Path, run_for: timedelta = WORKER_RUN_FOR) -> DAG:
    """The continuous collector worker DAG of the pipeline configured by ``config``.

    One collector task per log host of the config's ``worker.hosts``, each on its host's
    queue (:mod:`sluice_airflow.queues`); without hosts, one ``collect`` task on the default
    queue.
    """
    name, _ = dag_settings(config)
    config_path = str(config.resolve())
    routes = collector_routes(config)
    with DAG(
        dag_id=f"sluice_{name}_worker",
        description=f"Sluice collector worker of {name}: tail the logs, seal requested checkpoints",
        doc_md=WORKER_DOC_MD.format(
            name=name, config=config_path, hours=run_for.total_seconds() / 3600
        )
        + "\n"
        + routing_summary(routes)
        + "\n",
        schedule="@continuous",
        **PAUSED_ONE_RUN_AT_A_TIME,
        tags=["sluice", "logs", "collector"],
        default_args={"retries": 0},
    ) as dag:
        for route in routes:
            CollectorWorkerOperator(
                config_path=config_path,
                run_for=run_for,
                execution_timeout=run_for + timedelta(minutes=15),
                **route.operator_kwargs(),
            )
    return dag


MAINTENANCE_DOC_MD = """\
### Sluice lake maintenance `{name}`

Config: `{config}`

Once a day: rewrites each lake table's small files of the previous days into files of about
256 MB (one atomic commit per table and day: readers see the old files or the new ones, and
no query result changes), expires snapshots older than a week, deletes files no snapshot
references (left by landings that crashed) and the staging batches of committed checkpoints
older than `handoff.retain_hours`. Paused when created. `sluice compact` does the same.
"""


def build_maintenance_dag(config: Path) -> DAG:
    """The daily lake maintenance DAG of the pipeline configured by ``config``."""
    name, _ = dag_settings(config)
    config_path = str(config.resolve())
    with DAG(
        dag_id=f"sluice_{name}_maintenance",
        description=f"Sluice lake maintenance of {name}: compact, expire, remove orphans",
        doc_md=MAINTENANCE_DOC_MD.format(name=name, config=config_path),
        schedule="@daily",
        **PAUSED_ONE_RUN_AT_A_TIME,
        tags=["sluice", "lake", "maintenance"],
        default_args={"retries": 1, "retry_delay": timedelta(minutes=5)},
    ) as dag:
        LakeMaintenanceOperator(task_id="maintain", config_path=config_path)
    return dag


def pipeline_dags(folder: Path | None = None) -> dict[str, DAG]:
    """Every DAG of every pipeline config in ``folder`` (default: :func:`pipelines_dir`), by id.

    A DAG file hands them to Airflow with ``globals().update(pipeline_dags())``.
    """
    dags: dict[str, DAG] = {}
    for config in pipeline_configs(folder if folder is not None else pipelines_dir()):
        for dag in (build_dag(config), build_worker_dag(config), build_maintenance_dag(config)):
            dags[dag.dag_id] = dag
    return dags
