"""Finding a deployment's pipeline configs, their schedules and their lake assets.

What the DAG factory (:mod:`sluice_airflow.dag_factory`) and the example consumer DAG read at
parse time. Importing it reads plain YAML only, never ``pipeline_core``'s machinery, so
parsing stays cheap and one broken config never breaks another pipeline's DAGs.

The folder of configs is, first found: ``$SLUICE_PIPELINES_DIR``; Airflow's config option
``[sluice] pipelines_dir`` (``AIRFLOW__SLUICE__PIPELINES_DIR``); ``pipelines/`` beside the DAGs
folder (``<[core] dags_folder>/../pipelines``).
"""

from __future__ import annotations

import functools
import logging
import os
import re
from pathlib import Path
from typing import Any

import yaml
from airflow.sdk import Asset, CronDataIntervalTimetable
from airflow.sdk.exceptions import AirflowTimetableInvalid

log = logging.getLogger(__name__)

PIPELINES_DIR_ENV = "SLUICE_PIPELINES_DIR"
CONFIG_SECTION = "sluice"
"""Airflow config section of the Sluice provider (declared in its provider info)."""
PIPELINE_NAME = re.compile(r"[a-z][a-z0-9_]{0,62}")
SCHEDULE = "*/5 * * * *"
PASS_THROUGH_SCHEDULES = frozenset({"@once", "@continuous"})
"""Presets that are not cron expressions: handed to Airflow as they are."""


def pipelines_dir() -> Path:
    """The folder of pipeline configs (see the module's doc for where it is looked up)."""
    from airflow.providers.common.compat.sdk import conf

    configured = os.environ.get(PIPELINES_DIR_ENV) or conf.get(
        CONFIG_SECTION, "pipelines_dir", fallback=""
    )
    if configured:
        return Path(configured).expanduser()
    return default_pipelines_dir()


def default_pipelines_dir() -> Path:
    """``pipelines/`` beside Airflow's DAGs folder: ``<[core] dags_folder>/../pipelines``."""
    from airflow.providers.common.compat.sdk import conf

    dags_folder = conf.get("core", "dags_folder", fallback="") or "."
    return Path(dags_folder).expanduser().resolve().parent / "pipelines"


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


def config_document(config: Path) -> dict[str, Any] | None:
    """The config file as plain YAML: its mapping, or ``None`` when it holds something else.

    Read once per version of the file (its path, size and modification time) however many of
    the pipeline's DAGs ask.

    :raises OSError, UnicodeDecodeError, yaml.YAMLError: the file cannot be read as YAML.
    """
    info = config.stat()
    return _parsed(config, info.st_size, info.st_mtime_ns)


@functools.lru_cache(maxsize=256)
def _parsed(config: Path, size: int, mtime_ns: int) -> dict[str, Any] | None:
    document = yaml.safe_load(config.read_text(encoding="utf-8"))
    return document if isinstance(document, dict) else None


def dag_settings(config: Path) -> tuple[str, str | None]:
    """The pipeline's ``name`` and ``schedule`` from its config, read as plain YAML.

    Full validation happens in the tasks; a file that cannot be read here falls back to its
    file name and the default schedule, so one broken config never breaks DAG parsing.
    """
    try:
        document = config_document(config)
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        log.warning("Reading %s: %s; using the file name and the default schedule", config, exc)
        return config.stem, SCHEDULE
    if document is None:
        return config.stem, SCHEDULE
    name = document.get("name")
    if not isinstance(name, str) or PIPELINE_NAME.fullmatch(name) is None:
        name = config.stem
    schedule = document.get("schedule", SCHEDULE)
    return name, schedule if isinstance(schedule, str) or schedule is None else SCHEDULE


def pipeline_names() -> list[str]:
    """The names of the pipelines configured in :func:`pipelines_dir`, in file order."""
    return [dag_settings(config)[0] for config in pipeline_configs(pipelines_dir())]


def timetable(schedule: str | None) -> CronDataIntervalTimetable | str | None:
    """The pipeline DAG's timetable for a config's ``schedule``.

    A cron expression (or a cron preset such as ``@hourly``) becomes a
    ``CronDataIntervalTimetable`` in UTC: every run covers the interval since the previous
    tick, so a run's data interval says which checkpoints it requested and backfill
    intervals tile time (each checkpoint belongs to exactly one). ``None``, ``@once`` and
    ``@continuous`` pass through. An expression that is not valid cron falls back to the
    default schedule with a warning, so a typo never breaks DAG parsing.
    """
    if schedule is None or schedule in PASS_THROUGH_SCHEDULES:
        return schedule
    try:
        table = CronDataIntervalTimetable(schedule, timezone="UTC")
        table.validate()
    except AirflowTimetableInvalid as exc:
        log.warning("schedule %r is not a cron expression (%s); using %r", schedule, exc, SCHEDULE)
        return CronDataIntervalTimetable(SCHEDULE, timezone="UTC")
    return table


def lake_asset(name: str) -> Asset:
    """The Airflow asset of pipeline ``name``'s lake tables (updated by each commit).

    The URI names the table logically, ``sluice://lake/<name>``, not by path: the lake's path
    comes from the config (or the ``sluice_lake`` connection) when a task runs, and each asset
    event's ``extra`` carries it with the checkpoints and counts that landed.
    """
    return Asset(
        name=f"sluice_{name}_lake",
        uri=f"sluice://lake/{name}",
        group="sluice",
        extra={"pipeline": name},
    )


INTERVAL_PARTITIONED = "data_interval"
"""``extra["partitioned_by"]`` of the lake asset whose events carry partition keys."""


def lake_interval_asset(name: str) -> Asset:
    """Pipeline ``name``'s lake tables as an asset partitioned by data interval.

    The commit step updates it with the same ``extra`` as :func:`lake_asset`, plus one
    partition key per data interval the landed checkpoints belong to (the interval's start,
    ``%Y-%m-%dT%H:%M:%S`` UTC: ``pipeline_core.runs.interval_keys``). Schedule a DAG on it
    with ``PartitionedAssetTimetable`` to run once per interval, backfills included. It is a
    second asset because Airflow never queues a DAG that is not partition-aware for a
    partitioned event: DAGs on :func:`lake_asset` keep running on every commit.
    """
    return Asset(
        name=f"sluice_{name}_lake_intervals",
        uri=f"sluice://lake/{name}/intervals",
        group="sluice",
        extra={"pipeline": name, "partitioned_by": INTERVAL_PARTITIONED},
    )
