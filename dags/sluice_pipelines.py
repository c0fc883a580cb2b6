"""One Airflow DAG per Sluice pipeline: ``sluice_<name>`` for each pipeline config file.

The configs are the ``*.yaml`` files of ``$SLUICE_PIPELINES_DIR`` (default: ``pipelines/`` in
the repository). Parsing this file reads only each config's ``name`` and ``schedule`` (plain
YAML); the tasks validate the whole config, so a broken config never breaks DAG parsing. A
file whose name is not a valid pipeline name (lower-case letters, digits, ``_``; starting with
a letter) is skipped with a warning.

Each run N: ``request_checkpoint`` >> ``wait_sealed`` >> ``land`` >> ``commit``.
"""

from __future__ import annotations

import logging
import os
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import yaml
from airflow.sdk import DAG
from sluice_airflow.operators.sluice import (
    CommitCheckpointOperator,
    LandCheckpointOperator,
    RequestCheckpointOperator,
)
from sluice_airflow.sensors.sluice import CheckpointSealedSensor

log = logging.getLogger(__name__)

PIPELINES_DIR_ENV = "SLUICE_PIPELINES_DIR"
DEFAULT_PIPELINES_DIR = Path(__file__).resolve().parents[1] / "pipelines"
PIPELINE_NAME = re.compile(r"[a-z][a-z0-9_]{0,62}")
SCHEDULE = "*/5 * * * *"
CHECKPOINT_ID = "{{ ti.xcom_pull(task_ids='request_checkpoint') }}"

DOC_MD = """\
### Sluice pipeline `{name}`

Config: `{config}`

Every run lands one checkpoint of the pipeline's logs into the lake, exactly once:

1. **request_checkpoint** asks for checkpoint N for this run (a retry gets the same N).
   *Collection mode:* when no long-running collector worker holds the pipeline's lease, the
   task collects every file to its current end **in-process (one-shot)** and seals N itself;
   when a worker is live, the worker seals N at its next barrier.
2. **wait_sealed** waits until N is sealed (fails at once if N failed).
3. **land** spark-submits `spark_jobs/land_checkpoint.py` for N on the `spark_default`
   connection (`local[*]` unless the connection says otherwise).
4. **commit** marks N committed; its XCom holds the lines, rows and rejects that landed.
"""


def pipelines_dir() -> Path:
    """The folder of pipeline configs: ``$SLUICE_PIPELINES_DIR`` or ``<repo>/pipelines``."""
    configured = os.environ.get(PIPELINES_DIR_ENV)
    return Path(configured) if configured else DEFAULT_PIPELINES_DIR


def pipeline_configs(folder: Path) -> list[Path]:
    """The pipeline config files of ``folder``, by name; none when it does not exist."""
    if not folder.is_dir():
        return []
    configs = []
    for path in sorted(folder.glob("*.yaml")):
        if not path.is_file():
            continue
        if PIPELINE_NAME.fullmatch(path.stem) is None:
            log.warning("Skipping %s: %r is not a valid pipeline name", path, path.stem)
            continue
        configs.append(path)
    return configs


def dag_settings(config: Path) -> tuple[str, str | None]:
    """The pipeline's ``name`` and ``schedule`` from its config, read as plain YAML.

    Full validation happens in the tasks; a file that cannot be read here falls back to its
    file name and the default schedule, so one broken config never breaks DAG parsing.
    """
    try:
        document = yaml.safe_load(config.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        log.warning("Reading %s: %s; using the file name and the default schedule", config, exc)
        return config.stem, SCHEDULE
    if not isinstance(document, dict):
        return config.stem, SCHEDULE
    name = document.get("name")
    if not isinstance(name, str) or PIPELINE_NAME.fullmatch(name) is None:
        name = config.stem
    schedule = document.get("schedule", SCHEDULE)
    return name, schedule if isinstance(schedule, str) or schedule is None else SCHEDULE


def build_dag(config: Path) -> DAG:
    """The DAG of the pipeline configured by ``config``."""
    name, schedule = dag_settings(config)
    config_path = str(config.resolve())
    with DAG(
        dag_id=f"sluice_{name}",
        description=f"Sluice pipeline {name}: collect, seal, land and commit one checkpoint",
        doc_md=DOC_MD.format(name=name, config=config_path),
        schedule=schedule,
        start_date=datetime(2025, 1, 1, tzinfo=UTC),
        catchup=False,
        max_active_runs=1,
        dagrun_timeout=timedelta(hours=1),
        tags=["sluice", "logs", "spark"],
        default_args={"retries": 2, "retry_delay": timedelta(seconds=30)},
    ) as dag:
        request = RequestCheckpointOperator(task_id="request_checkpoint", config_path=config_path)
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
            task_id="commit", config_path=config_path, checkpoint_id=CHECKPOINT_ID
        )
        request >> wait >> land >> commit
    return dag


for _config in pipeline_configs(pipelines_dir()):
    _dag = build_dag(_config)
    globals()[_dag.dag_id] = _dag
