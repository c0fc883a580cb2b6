"""The checks of ``sluice validate``: everything a pipeline needs before it runs, read-only.

Each check is one :class:`Check` with a :class:`CheckStatus`; nothing is created, migrated or
written (no folder, no database file, no table): folders are judged by the nearest one that
exists, the metastore is only connected to, sinks only asked (HTTP ``HEAD``, SQL ``SELECT 1``).
The one exception is staging in an object store, which can only be known writable by writing:
a probe object is written, read back and deleted.

Here: the order of the checks, and the schedule's. The sources' and folders' checks are in
``_preflight_files``, the metastore's, the lake catalog's and the sinks' in
``_preflight_services``.
"""

from __future__ import annotations

from datetime import datetime, timezone

from pipeline_core.cli._check import Check, CheckStatus
from pipeline_core.cli._preflight_files import check_folder, check_lake, check_source, check_staging
from pipeline_core.cli._preflight_services import check_catalog, check_metastore, check_sinks
from pipeline_core.config import PipelineConfig

PASS_THROUGH_SCHEDULES = ("@once", "@continuous")
CRON_PRESETS = {
    "@hourly": "0 * * * *",
    "@daily": "0 0 * * *",
    "@weekly": "0 0 * * 0",
    "@monthly": "0 0 1 * *",
    "@quarterly": "0 0 1 */3 *",
    "@yearly": "0 0 1 1 *",
}
"""Airflow's cron presets, as the cron expressions they stand for."""


def preflight(config: PipelineConfig) -> list[Check]:
    """Every check of ``config`` (read and valid already), in the order a reader follows."""
    checks = [check_schedule(config.schedule)]
    checks += [check_source(source) for source in config.sources]
    checks.append(check_folder("data_dir", config.data_dir))
    checks += check_staging(config)
    checks.append(check_lake(config))
    metastore = check_metastore(config.metastore_url, config.metastore.pooling)
    checks.append(metastore)
    if metastore.ok:
        checks.append(check_catalog(config))
    checks += list(check_sinks(config))
    return checks


# -- the schedule --------------------------------------------------------------------------------


def check_schedule(schedule: str | None) -> Check:
    """A cron expression or an Airflow preset (``@hourly``, ``@once``...); null: manual runs."""
    from croniter import croniter

    if schedule is None:
        return Check("schedule", CheckStatus.OK, "none: the DAG runs only when triggered")
    if schedule in PASS_THROUGH_SCHEDULES:
        return Check("schedule", CheckStatus.OK, f"{schedule} (an Airflow preset)")
    expression = CRON_PRESETS.get(schedule, schedule)
    if len(expression.split()) != 5 or not croniter.is_valid(expression):
        return Check(
            "schedule",
            CheckStatus.INVALID,
            f"{schedule!r} is not a cron expression (five fields, e.g. '*/5 * * * *') nor an "
            f"Airflow preset ({', '.join([*CRON_PRESETS, *PASS_THROUGH_SCHEDULES])})",
        )
    upcoming = croniter(expression, datetime.now(timezone.utc)).get_next(datetime)
    return Check("schedule", CheckStatus.OK, f"{schedule} (next run {upcoming:%Y-%m-%d %H:%M} UTC)")
