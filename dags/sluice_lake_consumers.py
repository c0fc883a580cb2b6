"""Example downstream DAG: runs whenever a Sluice pipeline commits new data to its lake table.

Each pipeline DAG's ``commit`` task updates the asset ``sluice://lake/<name>`` (see
``sluice_airflow.pipeline_configs.lake_asset``), with the checkpoints, counts and lake path that landed in the
asset event's ``extra``. ``sluice_lake_consumers`` is scheduled on all of them and only logs
what landed: copy it to start a DAG of your own (a report, a compaction, an export) that runs
on fresh data instead of on a clock. Paused when created.
"""

from __future__ import annotations

import logging
from datetime import datetime, timezone
from typing import Any

from airflow.sdk import DAG, AssetAny, task
from sluice_airflow.pipeline_configs import lake_asset, pipeline_names

log = logging.getLogger(__name__)


@task
def log_landings(triggering_asset_events: Any = None) -> list[dict[str, Any]]:
    """Log (and return) what each triggering asset event says landed."""
    landed: list[dict[str, Any]] = []
    for asset, events in (triggering_asset_events or {}).items():
        for event in events:
            extra = dict(event.extra or {})
            log.info(
                "%s: checkpoints %s landed %s rows (%s rejects) into %s, from %s/%s",
                asset.uri,
                extra.get("checkpoint_ids"),
                extra.get("rows"),
                extra.get("rejects"),
                extra.get("lake"),
                event.source_dag_id,
                event.source_run_id,
            )
            landed.append({"asset": asset.uri, **extra})
    return landed


_assets = [lake_asset(name) for name in pipeline_names()]
if _assets:
    with DAG(
        dag_id="sluice_lake_consumers",
        description="Example: runs when a Sluice pipeline commits data to its lake table",
        doc_md=__doc__,
        schedule=AssetAny(*_assets),
        start_date=datetime(2025, 1, 1, tzinfo=timezone.utc),
        catchup=False,
        is_paused_upon_creation=True,
        tags=["sluice", "example"],
    ) as sluice_lake_consumers:
        log_landings()
