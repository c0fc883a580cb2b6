"""LakeMaintenanceOperator: compaction, snapshot expiry, orphan and staging removal."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseOperator

from sluice_airflow.hooks.sluice import SluiceHook

if TYPE_CHECKING:
    from airflow.sdk import Context


class LakeMaintenanceOperator(BaseOperator):
    """Keep a pipeline's lake tables small and fast (``sluice compact`` as a task).

    Compacts the day partition ``day`` of every table into files of about 256 MB in one commit
    per table and day (by default every day before the run's date that has more than one
    file), expires snapshots older than a week, deletes files no snapshot references and the
    staging of committed checkpoints older than ``handoff.retain_hours``. Readers are never
    disturbed: each change is one atomic commit.

    Returns (XCom) ``{"compacted": [{"table", "day", "files_before", "files_after"}],
    "expired_snapshots", "orphan_files"}``.

    :param config_path: the pipeline's config file. (templated)
    :param day: the day partition to compact, ``YYYY-MM-DD``; empty: every earlier day.
        (templated)
    """

    template_fields: Sequence[str] = ("config_path", "day")
    ui_color = "#f3eefc"

    def __init__(self, *, config_path: str, day: str = "", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.config_path = config_path
        self.day = day

    def execute(self, context: Context) -> dict[str, Any]:
        day = date.fromisoformat(self.day) if self.day else None
        report = SluiceHook(config_path=self.config_path).operations.retention.maintain(day)
        compacted = [
            {
                "table": c.table,
                "day": c.day.isoformat(),
                "files_before": c.files_before,
                "files_after": c.files_after,
            }
            for c in report.compactions
            if c.committed
        ]
        self.log.info(
            "Compacted %d day partitions; expired %d snapshots; removed %d orphan files; "
            "forgot %d checkpoints",
            len(compacted),
            report.expired_snapshots,
            report.orphan_files,
            report.forgotten_checkpoints,
        )
        return {
            "compacted": compacted,
            "expired_snapshots": report.expired_snapshots,
            "orphan_files": report.orphan_files,
            "forgotten_checkpoints": report.forgotten_checkpoints,
        }
