"""Reading back what the lake holds (with pyarrow; no Spark needed)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow.dataset as ds

from pipeline_core.config import PipelineConfig, SourceFormat
from pipeline_core.staging_contract import REJECTS_TABLE


@dataclass(frozen=True)
class LakeSummary:
    """Row counts of a pipeline's lake tables."""

    rows: dict[str, int]
    """Parsed rows per source table."""
    rejects: dict[str, int]
    """Rejected lines per reason."""
    statuses: dict[str, Counter[int]] = field(default_factory=dict)
    """Rows per HTTP status, for nginx sources."""
    distinct_event_ids: int = 0

    def lines(self) -> list[str]:
        out = []
        for source, count in self.rows.items():
            out.append(f"lake table {source}: {count} rows")
            for status, n in sorted(self.statuses.get(source, Counter()).items()):
                out.append(f"  status {status}: {n}")
        out.append(
            f"distinct event ids: {self.distinct_event_ids} (one per row: no duplicates)"
            if self.distinct_event_ids == sum(self.rows.values())
            else f"distinct event ids: {self.distinct_event_ids} (DUPLICATES in the lake)"
        )
        total = sum(self.rejects.values())
        out.append(f"rejects: {total} lines")
        for reason, n in sorted(self.rejects.items()):
            out.append(f"  {reason}: {n}")
        return out


def _table(path: Path) -> ds.Dataset | None:
    if not path.exists() or not any(path.rglob("*.parquet")):
        return None
    return ds.dataset(path, format="parquet", partitioning="hive")


def summarize_lake(config: PipelineConfig) -> LakeSummary:
    rows: dict[str, int] = {}
    statuses: dict[str, Counter[int]] = {}
    distinct = 0
    for source in config.sources:
        table = _table(config.lake_dir / source.name)
        if table is None:
            rows[source.name] = 0
            continue
        columns = ["event_id"]
        if source.format is SourceFormat.NGINX_COMBINED:
            columns.append("status")
        data = table.to_table(columns=columns)
        rows[source.name] = data.num_rows
        distinct += len(data.column("event_id").unique())
        if "status" in columns:
            statuses[source.name] = Counter(data.column("status").to_pylist())
    rejects: Counter[str] = Counter()
    reject_table = _table(config.lake_dir / REJECTS_TABLE)
    if reject_table is not None:
        rejects.update(reject_table.to_table(columns=["reason"]).column("reason").to_pylist())
    return LakeSummary(rows, dict(rejects), statuses, distinct)
