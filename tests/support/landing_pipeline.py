"""A pipeline whose collector runs in this process (``collect_once``) and whose landings run
the real Spark job on the test's session: what the landing fault tests drive."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from pipeline_core.lake import LandingMode, lake_location
from pipeline_core.operations import CheckpointInfo, PipelineOperations
from pipeline_core.testing import UniqueAccessLines, append, check_exactly_once, table_rows
from tests.support.faults import FaultSeed, land_checkpoints
from tests.support.lake import snapshot_operations
from tests.support.pipelines import write_config


class LandingPipeline:
    """A pipeline whose collector runs in this process, writing unique lines."""

    def __init__(self, folder: Path, metastore_url: str, seed: FaultSeed) -> None:
        self.config_path = write_config(folder, metastore_url)
        self.operations = PipelineOperations(self.config_path)
        self.config = self.operations.config
        self.lake = lake_location(self.config)
        self.log = folder / "logs" / "access.log"
        self._source = UniqueAccessLines(seed.value)
        self._rng = seed.rng
        self.written: list[bytes] = []
        """The well-formed lines written: each must be one row of ``access``."""
        self.rejected: list[bytes] = []
        """The lines written that cannot parse: each must be one reject."""

    def write(self, malformed: int = 0) -> list[bytes]:
        lines = self._source.lines(len(self.written), self._rng.randint(100, 1500))
        bad = [f"not an access line {len(self.rejected) + i}".encode() for i in range(malformed)]
        append(self.log, *lines[: len(lines) // 2], *bad, *lines[len(lines) // 2 :])
        self.written += lines
        self.rejected += bad
        return lines

    def seal(
        self,
        run_id: str | None = None,
        interval: tuple[datetime, datetime] | None = None,
        malformed: int = 0,
    ) -> int:
        """Write lines and seal them into a checkpoint, as a DAG run's request task does."""
        self.write(malformed)
        if run_id is not None:
            requested = self.operations.request_checkpoint(run_id, interval).checkpoint_id
        (sealed,) = self.operations.collect_once().sealed
        if run_id is not None:
            assert sealed.checkpoint_id == requested
        return sealed.checkpoint_id

    def info(self, checkpoint_id: int) -> CheckpointInfo:
        return self.operations.checkpoint(checkpoint_id)

    def land(
        self,
        spark: SparkSession,
        *checkpoint_ids: int,
        landing_id: str | None = None,
        mode: LandingMode = LandingMode.APPEND,
    ) -> dict[str, Any]:
        summary = land_checkpoints(
            spark, self.operations, checkpoint_ids, landing_id=landing_id, mode=mode
        )
        assert summary is not None
        return summary

    def land_and_commit(
        self,
        spark: SparkSession,
        *checkpoint_ids: int,
        landing_id: str | None = None,
        mode: LandingMode = LandingMode.APPEND,
    ) -> dict[str, Any]:
        summary = self.land(spark, *checkpoint_ids, landing_id=landing_id, mode=mode)
        self.operations.commit(checkpoint_ids)
        return summary

    def assert_exactly_once(self, seed: FaultSeed) -> None:
        outcome = check_exactly_once(self.lake, self.written, rejected=self.rejected)
        assert outcome.holds, seed.note(outcome.describe())

    def rows_of(self, checkpoint_id: int, table: str = "access") -> int:
        return int(table_rows(self.lake, table, checkpoint_id).num_rows)

    def snapshots(self, table: str = "access") -> list[tuple[str, str | None]]:
        return snapshot_operations(self.lake, table)
