"""Example downstream DAGs: they run when a Sluice pipeline commits new data to its lake.

Each pipeline DAG's ``commit`` task updates two assets (``sluice_airflow.pipeline_configs``),
with the checkpoints, counts and lake path that landed in the asset event's ``extra``:

* ``sluice://lake/<name>`` on every commit. ``sluice_lake_consumers`` is scheduled on all of
  them and logs what landed.
* ``sluice://lake/<name>/intervals``, the same events keyed by the data interval each landed
  checkpoint belongs to (Airflow asset partitions). ``sluice_lake_intervals`` runs once per
  interval key, with the key as its run's ``partition_key``: a DAG that rebuilds an hourly
  report, say, for exactly the interval that landed, backfills included.

Both only log: copy one to start a DAG of your own that runs on fresh data instead of on a
clock. Paused when created.
"""

from __future__ import annotations

import logging
from datetime import datetime, timezone
from typing import Any

from airflow.sdk import DAG, AssetAny, PartitionedAssetTimetable, task
from sluice_airflow.pipeline_configs import lake_asset, lake_interval_asset, pipeline_names

log = logging.getLogger(__name__)
START_DATE = datetime(2025, 1, 1, tzinfo=timezone.utc)


@task
def log_landings(triggering_asset_events: Any = None, dag_run: Any = None) -> list[dict[str, Any]]:
    """Log (and return) what each triggering asset event says landed."""
    landed: list[dict[str, Any]] = []
    partition = getattr(dag_run, "partition_key", None)
    for asset, events in (triggering_asset_events or {}).items():
        for event in events:
            extra = dict(event.extra or {})
            log.info(
                "%s%s: checkpoints %s landed %s rows (%s rejects) into %s, from %s/%s",
                asset.uri,
                f" [{partition}]" if partition else "",
                extra.get("checkpoint_ids"),
                extra.get("rows"),
                extra.get("rejects"),
                extra.get("lake"),
                event.source_dag_id,
                event.source_run_id,
            )
            landed.append({"asset": asset.uri, "partition_key": partition, **extra})
    return landed


_names = pipeline_names()
if _names:
    with DAG(
        dag_id="sluice_lake_consumers",
        description="Example: runs when a Sluice pipeline commits data to its lake",
        doc_md=__doc__,
        schedule=AssetAny(*(lake_asset(name) for name in _names)),
        start_date=START_DATE,
        catchup=False,
        is_paused_upon_creation=True,
        tags=["sluice", "example"],
    ) as sluice_lake_consumers:
        log_landings()

    with DAG(
        dag_id="sluice_lake_intervals",
        description="Example: runs once per data interval a Sluice pipeline lands",
        doc_md=__doc__,
        schedule=PartitionedAssetTimetable(
            assets=AssetAny(*(lake_interval_asset(name) for name in _names))
        ),
        start_date=START_DATE,
        catchup=False,
        is_paused_upon_creation=True,
        tags=["sluice", "example"],
    ) as sluice_lake_intervals:
        log_landings()
