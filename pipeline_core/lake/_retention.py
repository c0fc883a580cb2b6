"""PipelineRetention: what one pipeline keeps and for how long: the staging of committed
checkpoints (``handoff.retain_hours``), their metastore rows (``metastore.retain_days``), and
the lake's maintenance (compaction, snapshot expiry, orphan files: :mod:`._maintenance`).

The landing job's driver imports this package without the metastore or the config: they are
imported here where they are used.
"""

from __future__ import annotations

import logging
from datetime import date, datetime, timedelta, timezone
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pipeline_core._pipeline_context import PipelineContext
    from pipeline_core.lake._maintenance import MaintenanceReport

log = logging.getLogger(__name__)


class PipelineRetention:
    """Retention and maintenance of the pipeline of ``context``."""

    def __init__(self, context: PipelineContext) -> None:
        self._context = context

    def remove_committed_staging(self, now: datetime | None = None) -> list[int]:
        """Delete the staging folders of committed checkpoints sealed more than
        ``handoff.retain_hours`` ago; returns their ids."""
        from pipeline_core.metastore import CheckpointState, as_utc

        config = self._context.config
        cutoff = (now or datetime.now(timezone.utc)) - timedelta(hours=config.handoff.retain_hours)
        with self._context.metastore() as metastore:
            records = metastore.checkpoints(config.name, [CheckpointState.COMMITTED])
        removed = []
        staging = config.staging_area
        for record in records:
            if record.sealed_at is None or as_utc(record.sealed_at) > cutoff:
                continue
            if staging.remove(record.checkpoint_id):
                removed.append(record.checkpoint_id)
        if removed:
            log.info("Removed the staging of committed checkpoints %s", removed)
        return removed

    def forget_old_checkpoints(self, now: datetime | None = None) -> list[int]:
        """Delete the metastore rows of checkpoints committed more than
        ``metastore.retain_days`` ago whose staging is removed (``handoff.retain_hours``):
        the checkpoints, their host rows, batches and byte ranges. Returns their ids."""
        config = self._context.config
        kept = max(
            timedelta(days=config.metastore.retain_days),
            timedelta(hours=config.handoff.retain_hours),
        )
        before = (now or datetime.now(timezone.utc)) - kept
        with self._context.metastore() as metastore:
            forgotten = metastore.transitions.forget_checkpoints(config.name, before)
        if forgotten:
            log.info(
                "Forgot %d checkpoints committed before %s (%d..%d)",
                len(forgotten),
                before.isoformat(timespec="seconds"),
                forgotten[0],
                forgotten[-1],
            )
        return forgotten

    def maintain(self, day: date | None = None) -> MaintenanceReport:
        """Compact the lake tables (``day``, or every day before today with more than one
        file), expire old snapshots, remove orphan files, the staging of committed checkpoints
        past ``handoff.retain_hours`` and the metastore rows past ``metastore.retain_days``."""
        from pipeline_core.lake import maintain_lake

        report = maintain_lake(self._context.config, day)
        with self._context.metastore():  # one for the staging's and the rows' retention
            self.remove_committed_staging()
            report.forgotten_checkpoints = len(self.forget_old_checkpoints())
        return report
