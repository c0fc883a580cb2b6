"""What a run committed: the summary its commit step returns, and a one-line note of it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pipeline_core.operations import CheckpointInfo


def commit_summary(committed: Sequence[CheckpointInfo], *, single: bool) -> dict[str, Any]:
    """The summary of committed checkpoints, as a run's commit step returns it.

    With ``single`` (the run landed one checkpoint, named by itself), the one checkpoint's
    ``{"checkpoint_id", "checkpoint_ids", "lines", "bytes", "rows", "rejects", "rescued",
    "landing"}``: lines and bytes sealed into it, the totals of parsed rows and rejected lines
    its landing job reported (``None`` when it did not report them), the values its rows keep
    in a ``rescued`` column, and the job's summary itself (rows per source table, rejects per
    reason, rescued values per source) and ``snapshots``, each lake table's snapshot as
    the commit read it. Otherwise (a list of checkpoints, maybe empty)
    ``checkpoint_id`` is ``None``, the counts are totals over the list (zeros for none, ``None``
    when one checkpoint's count is unknown), ``snapshots`` are the last one's and
    ``checkpoints`` holds each one's summary.
    """
    landed = [_landed(info) for info in committed]
    return landed[0] if single else _totals(landed)


INTERVAL_KEY_FORMAT = "%Y-%m-%dT%H:%M:%S"
"""How a data interval's start names its partition (UTC): Airflow's ``CronPartitionTimetable``
default key format, so partition-aware DAGs on a cron can line up with Sluice's keys."""


def interval_keys(
    committed: Sequence[CheckpointInfo], run_interval: tuple[datetime, datetime] | None
) -> list[str]:
    """The data intervals what a run committed belongs to, as partition keys (sorted).

    Each checkpoint belongs to the interval of the DAG run that requested it; checkpoints no
    run requested (sealed by a stopping worker) belong to the interval of the run that
    landed them, ``run_interval``. Nothing committed, or no interval known at all: no key.
    """
    starts = set()
    for info in committed:
        interval = info.data_interval or run_interval
        if interval is not None:
            starts.add(interval_key(interval[0]))
    return sorted(starts)


def interval_key(start: datetime) -> str:
    """The partition key of the data interval starting at ``start``."""
    if start.tzinfo is not None:
        start = start.astimezone(timezone.utc)
    return start.strftime(INTERVAL_KEY_FORMAT)


def run_note(summary: Mapping[str, Any]) -> str:
    """One line for a DAG run's note from a commit summary (what the commit task returns)."""
    ids = summary.get("checkpoint_ids") or []
    if not ids:
        return "no checkpoint to land"
    which = f"checkpoint {ids[0]}" if len(ids) == 1 else f"checkpoints {', '.join(map(str, ids))}"
    rows = summary.get("rows")
    rejects = summary.get("rejects")
    rescued = summary.get("rescued")
    return (
        f"{which}: {summary.get('lines')} lines ({summary.get('bytes')} bytes) -> "
        f"{'?' if rows is None else rows} rows, {'?' if rejects is None else rejects} rejects"
        + (f" ({rescued} values rescued)" if rescued else "")
    )


def _landed(info: CheckpointInfo) -> dict[str, Any]:
    return {
        "checkpoint_id": info.checkpoint_id,
        "checkpoint_ids": [info.checkpoint_id],
        "lines": info.line_count,
        "bytes": info.byte_count,
        "rows": info.landed.rows,
        "rejects": info.landed.rejects,
        "rescued": sum((info.landing.get("rescued") or {}).values()),
        "landing": dict(info.landing),
        "snapshots": dict(info.landing.get("snapshots") or {}),
    }


def _totals(landed: list[dict[str, Any]]) -> dict[str, Any]:
    def total(key: str) -> int | None:
        counts = [item[key] for item in landed]
        return None if any(count is None for count in counts) else sum(counts)

    return {
        "checkpoint_id": None,
        "checkpoint_ids": [item["checkpoint_id"] for item in landed],
        "lines": total("lines"),
        "bytes": total("bytes"),
        "rows": total("rows"),
        "rejects": total("rejects"),
        "rescued": total("rescued"),
        "snapshots": landed[-1]["snapshots"] if landed else {},
        "checkpoints": landed,
    }
