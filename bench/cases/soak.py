"""Case 19: soak: an hour of a production pipeline, and whether anything grows that should not.

One long-running collector (``sluice collect``) tails three logs written at ``RATE`` bytes a
second in all. Each log is rotated every ``ROTATE_S`` as logrotate does it with ``dateext``
(every rotated name is new: ``app1.log-20261130-101500``), by rename (``create``: the writer
appends one more burst to the renamed file before it reopens) and by ``copytruncate`` in turn,
``ROTATIONS_KEPT`` rotated files kept (older ones deleted, as ``rotate 3`` does). Every
``CHECKPOINT_S`` a checkpoint is requested, sealed by the collector and landed on a warm Spark
Connect server, as the pipeline's DAG runs do. Every ``MAINTENANCE_S`` maintenance runs as its
DAG would, compressed in time: today's partition compacted, snapshots older than
``SNAPSHOT_RETENTION_S`` expired, orphan files older than ``ORPHAN_GRACE_S`` removed, then the
staging of committed checkpoints past ``handoff.retain_hours`` and their metastore rows past
``metastore.retain_days`` (both set to minutes here); read-progress samples are kept
``collector.progress_retain_hours`` and rotated files deleted and sealed are forgotten after
``collector.forget_done_files_after_h`` (minutes here).

Sampled after every landing: the collector's RSS and open descriptors, the rows of every
metastore table, the staging and spool bytes, each lake table's data files and bytes, its
``metadata/`` files and bytes and the current ``metadata.json``; the seal, landing and commit
latencies; and write -> queryable of every line landed (the landing's commit against the
moment the line was written). Printed: each series' slope per hour over the steady window (the
second half of the run: every retention applies by then), and whether it is bounded: its peak in
the last ``JUDGED_S`` of the run is at most its peak in the first ``JUDGED_S`` of the steady
window, give or take ``TOLERANCE``. Every series but the lake's data must be bounded; lines
lost and lines doubled must be 0.

``--soak-minutes`` sets the length (60 by default, 6 with ``--quick``); under 60 minutes every
period and retention above is shortened in proportion (the checkpoint interval to no less than
20 s).
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlparse

import numpy as np
import sqlalchemy as sa
import yaml

from bench import common
from bench.common import Context, Row, Stat

if TYPE_CHECKING:
    from pipeline_core.config import PipelineConfig
    from pipeline_core.lake import LakeLocation

DEFAULT_MINUTES = 60.0
QUICK_MINUTES = 6.0
FILES = 3
RATE = 1_000_000
"""Bytes per second the writer appends, over the three files."""
TICK_S = 0.1
ROTATE_S = 60.0
ROTATIONS_KEPT = 3
CHECKPOINT_S = 60.0
MAINTENANCE_S = 600.0
SNAPSHOT_RETENTION_S = 600.0
ORPHAN_GRACE_S = 120.0
STAGING_RETAIN_S = 360.0
CHECKPOINT_RETAIN_S = 720.0
PROGRESS_RETAIN_S = 600.0
FORGET_FILES_S = 600.0
JUDGED_S = 600.0
TOLERANCE = 0.10
"""How much a series' late peak may exceed its early peak and still count as flat."""
DRAIN_S = 300.0
"""How long the end waits for the last lines written to land."""
PATH_PREFIX = "/soak/"
GROWING_BY_DESIGN = ("data_files", "data_bytes")
"""The lake's data: the one thing that grows with the lines landed."""


@dataclass(frozen=True)
class Schedule:
    """The periods and retentions of one soak run, shortened for a run under an hour."""

    minutes: float
    scale: float

    @classmethod
    def of(cls, minutes: float) -> Schedule:
        return cls(minutes, min(1.0, minutes / DEFAULT_MINUTES))

    def seconds(self, full: float, floor: float = 1.0) -> float:
        return max(floor, full * self.scale)

    @property
    def checkpoint_s(self) -> float:
        return self.seconds(CHECKPOINT_S, 20.0)

    @property
    def rotate_s(self) -> float:
        return self.seconds(ROTATE_S, 20.0)

    @property
    def judged_s(self) -> float:
        return self.seconds(JUDGED_S, 2 * self.checkpoint_s)


def run(ctx: Context) -> list[Row]:
    minutes = ctx.soak_minutes or (QUICK_MINUTES if ctx.quick else DEFAULT_MINUTES)
    schedule = Schedule.of(minutes)
    work = ctx.work("soak")
    config = write_pipeline(work, schedule)
    writer = Writer(work / "logs", schedule)
    lake = LakeReader(config)
    samples: list[Sample] = []
    collector = common.start_collector(config)
    try:
        with common.connect_server(work / "spark-connect") as spark_connect:
            soak = Soak(config, spark_connect, schedule, writer, lake, collector.pid)
            with writing(writer):
                soak.loop(until=time.monotonic() + minutes * 60, samples=samples)
            soak.drain(samples)
    finally:
        errors = common.stop_collector(collector)
    common.check_collector(collector, errors)
    return result_rows(samples, writer, lake, schedule)


def write_pipeline(work: Path, schedule: Schedule) -> Path:
    logs = work / "logs"
    logs.mkdir(parents=True)
    for number in range(1, FILES + 1):
        (logs / f"app{number}.log").touch()
    document = {
        "name": "soak",
        "sources": [
            {
                "name": "access",
                "paths": [str(logs / "*.log"), str(logs / "*.log-*")],
                "format": "nginx_combined",
            }
        ],
        "data_dir": str(work / "data"),
        "collector": {
            "host": common.HOST,
            "progress_retain_hours": schedule.seconds(PROGRESS_RETAIN_S) / 3600,
            "forget_done_files_after_h": schedule.seconds(FORGET_FILES_S) / 3600,
        },
        "handoff": {"retain_hours": schedule.seconds(STAGING_RETAIN_S) / 3600},
        "metastore": {"retain_days": schedule.seconds(CHECKPOINT_RETAIN_S) / 86400},
        "schedule": None,
    }
    path = work / "soak.yaml"
    path.write_text(yaml.safe_dump(document))
    return path


# ------------------------------------------------------------------------------- the writer


@dataclass
class LogFile:
    """One application log: its numbered lines and when each tick of them was written."""

    path: Path
    number: int
    sequence: int = 0
    firsts: list[int] = field(default_factory=list)
    times: list[float] = field(default_factory=list)
    rotated: list[Path] = field(default_factory=list)

    def lines(self, size: int, stamp: str) -> bytes:
        first = self.sequence
        out = []
        written = 0
        while written < size:
            line = common.numbered_access_line(
                f"10.0.{self.number}.1",
                f"{PATH_PREFIX}{self.number}/",
                self.sequence,
                stamp,
                "soak-bench/1.0",
            )
            out.append(line)
            written += len(line)
            self.sequence += 1
        self.firsts.append(first)
        return b"".join(out)

    def written_at(self, sequences: np.ndarray) -> np.ndarray:
        """When each of ``sequences`` was written (``time.time()`` once flushed)."""
        index = np.searchsorted(np.asarray(self.firsts), sequences, side="right") - 1
        return np.asarray(self.times)[index]


class Writer:
    """Appends to ``FILES`` logs, rotating each every ``schedule.rotate_s`` (rename and
    copytruncate in turn, dateext names), from one thread; nothing is written between a
    copytruncate's copy and its truncation, so the writer loses no line."""

    def __init__(self, folder: Path, schedule: Schedule) -> None:
        self.logs = [LogFile(folder / f"app{n}.log", n) for n in range(1, FILES + 1)]
        self.schedule = schedule
        self.rotations = 0
        self._handles = {log.number: open(log.path, "ab") for log in self.logs}  # noqa: SIM115
        self._next_rotation = [
            time.monotonic() + schedule.rotate_s * (n + 1) / FILES for n in range(FILES)
        ]

    @property
    def written(self) -> int:
        return sum(log.sequence for log in self.logs)

    def tick(self) -> None:
        stamp = datetime.now(timezone.utc).strftime("%d/%b/%Y:%H:%M:%S +0000")
        size = int(RATE * TICK_S / FILES)
        for log in self.logs:
            handle = self._handles[log.number]
            handle.write(log.lines(size, stamp))
            handle.flush()
            log.times.append(time.time())
        now = time.monotonic()
        for index, log in enumerate(self.logs):
            if now >= self._next_rotation[index]:
                self._next_rotation[index] += self.schedule.rotate_s
                self.rotate(log, stamp)

    def rotate(self, log: LogFile, stamp: str) -> None:
        suffix = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
        target = log.path.with_name(f"{log.path.name}-{suffix}")
        if self.rotations % 2 == 0:
            os.rename(log.path, target)
            log.path.touch()
            old = self._handles[log.number]
            old.write(log.lines(int(RATE * TICK_S / FILES / 4), stamp))  # before it reopens
            old.flush()
            log.times.append(time.time())
            old.close()
            self._handles[log.number] = open(log.path, "ab")  # noqa: SIM115
        else:
            with open(log.path, "rb") as source, open(target, "wb") as copy:
                while chunk := source.read(1 << 20):
                    copy.write(chunk)
            os.truncate(log.path, 0)
        self.rotations += 1
        log.rotated.append(target)
        while len(log.rotated) > ROTATIONS_KEPT:
            log.rotated.pop(0).unlink(missing_ok=True)

    def close(self) -> None:
        for handle in self._handles.values():
            handle.close()


@contextmanager
def writing(writer: Writer) -> Iterator[None]:
    try:
        with common.ticking(writer.tick, TICK_S, "soak-writer"):
            yield
    finally:
        writer.close()


# ---------------------------------------------------------------------------- the lake side


class LakeReader:
    """What the lake holds of the writer's lines: how often each was seen, and when."""

    def __init__(self, config: Path) -> None:
        from pipeline_core.config import load_pipeline_config
        from pipeline_core.lake import lake_location

        self.location = lake_location(load_pipeline_config(config))
        self.counts: dict[int, np.ndarray] = {n: np.zeros(0, np.uint8) for n in range(1, FILES + 1)}
        self.delays: list[float] = []

    def read_checkpoint(self, checkpoint_id: int, writer: Writer) -> list[float]:
        """Count the lines of ``checkpoint_id``'s rows; their write -> queryable delays."""
        from pipeline_core.lake import open_lake

        seen_at = time.time()
        with open_lake(self.location) as catalog:
            table = catalog.load("access")
            assert table is not None
            paths = (
                table.scan(
                    row_filter=f"checkpoint_id == {checkpoint_id}", selected_fields=("path",)
                )
                .to_arrow()
                .column("path")
                .to_pylist()
            )
        by_file: dict[int, list[int]] = {}
        for path in paths:
            number, sequence = path.removeprefix(PATH_PREFIX).split("/")
            by_file.setdefault(int(number), []).append(int(sequence))
        delays: list[float] = []
        for log in writer.logs:
            sequences = np.asarray(by_file.get(log.number, []), dtype=np.int64)
            if not len(sequences):
                continue
            counts = self.counts[log.number]
            if counts.size <= sequences.max():
                counts = np.concatenate(
                    [counts, np.zeros(sequences.max() + 1 - counts.size, np.uint8)]
                )
                self.counts[log.number] = counts
            np.add.at(counts, sequences, 1)
            delays += (seen_at - log.written_at(sequences)).tolist()
        self.delays += delays
        return delays

    def seen(self) -> int:
        return sum(int(np.count_nonzero(c)) for c in self.counts.values())

    def doubled(self) -> int:
        return sum(
            int(np.clip(c.astype(np.int64) - 1, 0, None).sum()) for c in self.counts.values()
        )

    def lost(self, writer: Writer) -> int:
        missing = 0
        for log in writer.logs:
            counts = self.counts[log.number][: log.sequence]
            missing += log.sequence - int(np.count_nonzero(counts))
        return missing


# ------------------------------------------------------------------------------ the samples


@dataclass
class Sample:
    """The state after one landing (``at``: seconds since the start of the soak)."""

    at: float
    series: dict[str, float]
    """Every sampled quantity by name (rows per metastore table as ``rows.<table>``)."""


class Soak:
    """The request, seal, land and maintain cycle of the DAGs, and the samples after each."""

    def __init__(
        self,
        config: Path,
        spark_connect: str,
        schedule: Schedule,
        writer: Writer,
        lake: LakeReader,
        collector_pid: int,
    ) -> None:
        from pipeline_core.config import load_pipeline_config

        self.config_path = config
        self.config = load_pipeline_config(config)
        self.spark_connect = spark_connect
        self.schedule = schedule
        self.writer = writer
        self.lake = lake
        self.collector_pid = collector_pid
        self.started = time.monotonic()
        self.next_maintenance = self.started + schedule.seconds(MAINTENANCE_S, 60.0)
        self.checkpoints = 0

    def loop(self, until: float, samples: list[Sample]) -> None:
        next_request = time.monotonic() + self.schedule.checkpoint_s
        while next_request <= until:
            time.sleep(max(0.0, next_request - time.monotonic()))
            next_request += self.schedule.checkpoint_s
            samples.append(self.cycle())
            if time.monotonic() >= self.next_maintenance:
                self.next_maintenance += self.schedule.seconds(MAINTENANCE_S, 60.0)
                self.maintain()

    def drain(self, samples: list[Sample]) -> None:
        """Land checkpoints until every line written is in the lake (or ``DRAIN_S``)."""
        deadline = time.monotonic() + DRAIN_S
        while self.lake.seen() < self.writer.written and time.monotonic() < deadline:
            time.sleep(2.0)
            samples.append(self.cycle())

    def cycle(self) -> Sample:
        from pipeline_core.metastore import CheckpointState
        from pipeline_core.operations import open_pipeline

        self.checkpoints += 1
        timings: dict[str, float] = {}
        with open_pipeline(self.config_path) as pipeline:
            requested = time.monotonic()
            checkpoint = pipeline.request_checkpoint(f"soak-{self.checkpoints}")
            while pipeline.checkpoint(checkpoint.checkpoint_id).state is CheckpointState.REQUESTED:
                if time.monotonic() - requested > 120:
                    raise AssertionError(f"checkpoint {checkpoint.checkpoint_id} not sealed")
                time.sleep(0.05)
            timings["seal_s"] = time.monotonic() - requested
            progress = Progress()
            landed = time.monotonic()
            pipeline.land(
                [checkpoint.checkpoint_id], spark_connect=self.spark_connect, progress=progress
            )
            timings["landing_s"] = time.monotonic() - landed
            timings["spark_s"] = progress.spark_s
            timings["commit_s"] = time.monotonic() - progress.committing_at
        delays = self.lake.read_checkpoint(checkpoint.checkpoint_id, self.writer)
        if delays:
            timings["fresh_p50_s"] = float(np.percentile(delays, 50))
            timings["fresh_p99_s"] = float(np.percentile(delays, 99))
        return Sample(time.monotonic() - self.started, timings | self.state())

    def maintain(self) -> None:
        """Maintenance as the maintenance DAG runs it, its retentions compressed."""
        from pipeline_core.lake import (
            compact_table,
            expire_snapshots,
            open_lake,
            remove_orphan_files,
            table_names,
        )
        from pipeline_core.lake._maintenance import SNAPSHOTS_KEPT_MAX
        from pipeline_core.operations import open_pipeline

        today = datetime.now(timezone.utc).date()
        with open_lake(self.lake.location) as catalog:
            for name in table_names({s.name: s.format.value for s in self.config.sources}):
                table = catalog.load(name)
                if table is None:
                    continue
                compact_table(table, today)
                expire_snapshots(
                    table,
                    timedelta(seconds=self.schedule.seconds(SNAPSHOT_RETENTION_S)),
                    SNAPSHOTS_KEPT_MAX,
                )
                remove_orphan_files(table, timedelta(seconds=self.schedule.seconds(ORPHAN_GRACE_S)))
        with open_pipeline(self.config_path) as pipeline:
            pipeline.retention.remove_committed_staging()
            pipeline.retention.forget_old_checkpoints()

    def state(self) -> dict[str, float]:
        pid = self.collector_pid
        state: dict[str, float] = {
            "collector_rss_mb": common.status_kib(pid, "VmRSS") / 1024,
            "collector_fds": float(len(os.listdir(f"/proc/{pid}/fd"))),
            "staging_mb": folder_bytes(self.config.data_dir / "staging") / 1e6,
            "spool_mb": folder_bytes(
                self.config.handoff.spool_dir or self.config.data_dir / "spool"
            )
            / 1e6,
        }
        state |= metastore_rows(self.config.metastore_url)
        state |= lake_files(self.lake.location, self.config)
        return state


@dataclass
class Progress:
    """:class:`~pipeline_core.landing.LandingProgress`: when the commit step began."""

    spark_s: float = 0.0
    committing_at: float = 0.0

    def submitting(self, command: str) -> None:
        pass

    def spark_finished(self, seconds: float) -> None:
        self.spark_s = seconds

    def committing(self, checkpoint_ids: object) -> None:
        self.committing_at = time.monotonic()


def folder_bytes(folder: Path) -> int:
    total = 0
    for root, _, names in os.walk(folder):
        for name in names:
            try:
                total += os.stat(os.path.join(root, name)).st_size
            except FileNotFoundError:
                continue
    return total


def metastore_rows(url: str) -> dict[str, float]:
    engine = sa.create_engine(url)
    try:
        with engine.connect() as connection:
            names = sa.inspect(connection).get_table_names()
            return {
                f"rows.{name}": float(
                    connection.execute(sa.text(f'SELECT count(*) FROM "{name}"')).scalar_one()
                )
                for name in names
                if name != "alembic_version"
            }
    finally:
        engine.dispose()


def lake_files(location: LakeLocation, config: PipelineConfig) -> dict[str, float]:
    from pipeline_core.lake import open_lake, table_names

    found: dict[str, float] = {}
    with open_lake(location) as catalog:
        for name in table_names({s.name: s.format.value for s in config.sources}):
            table = catalog.load(name)
            if table is None:
                continue
            root = Path(urlparse(table.location()).path)
            data = list(files_under(root / "data"))
            metadata = list(files_under(root / "metadata"))
            found[f"{name}.data_files"] = float(len(data))
            found[f"{name}.data_bytes"] = float(sum(size for _, size in data))
            found[f"{name}.metadata_files"] = float(len(metadata))
            found[f"{name}.metadata_bytes"] = float(sum(size for _, size in metadata))
            found[f"{name}.metadata_json_bytes"] = float(
                os.stat(urlparse(table.metadata_location).path).st_size
            )
    return found


def files_under(folder: Path) -> Iterator[tuple[Path, int]]:
    for root, _, names in os.walk(folder):
        for name in names:
            path = Path(root) / name
            try:
                yield path, path.stat().st_size
            except FileNotFoundError:
                continue


# ------------------------------------------------------------------------------ the verdict


@dataclass(frozen=True)
class Trend:
    name: str
    slope_per_hour: float
    early_peak: float
    late_peak: float

    @property
    def bounded(self) -> bool:
        return self.late_peak <= self.early_peak * (1 + TOLERANCE) + 1.0


def trends(samples: list[Sample], schedule: Schedule) -> list[Trend]:
    if not samples:
        return []
    end = samples[-1].at
    steady_from = end / 2
    steady = [s for s in samples if s.at >= steady_from]
    early = [s for s in steady if s.at < steady_from + schedule.judged_s]
    late = [s for s in steady if s.at > end - schedule.judged_s]
    names = sorted({name for s in steady for name in s.series})
    found = []
    for name in names:
        points = [(s.at, s.series[name]) for s in steady if name in s.series]
        if len(points) < 3:
            continue
        hours = np.asarray([at / 3600 for at, _ in points])
        values = np.asarray([value for _, value in points])
        slope = float(np.polyfit(hours, values, 1)[0])
        found.append(
            Trend(
                name,
                slope,
                max((s.series[name] for s in early if name in s.series), default=0.0),
                max((s.series[name] for s in late if name in s.series), default=0.0),
            )
        )
    return found


def result_rows(
    samples: list[Sample], writer: Writer, lake: LakeReader, schedule: Schedule
) -> list[Row]:
    found = trends(samples, schedule)
    judged = [t for t in found if not t.name.endswith(GROWING_BY_DESIGN) and not is_latency(t.name)]
    growing = [t.name for t in judged if not t.bounded]
    lost, doubled = lake.lost(writer), lake.doubled()
    latencies = {
        name: [s.series[name] for s in samples if name in s.series]
        for name in ("seal_s", "landing_s", "commit_s", "fresh_p99_s")
    }
    slopes = "; ".join(
        f"{t.name} {t.slope_per_hour:+.3g}/h ({t.early_peak:.4g} -> {t.late_peak:.4g})"
        for t in found
    )
    return [
        Row(
            case="19",
            measure=f"soak {schedule.minutes:.0f} min: bounded state, lines once",
            sluice=Stat([float(len(growing))], "series growing"),
            target="0 series growing but the lake's data; 0 lost, 0 doubled",
            met=not growing and lost == 0 and doubled == 0 and bool(samples),
            note=f"{writer.written:,} lines written, {lake.seen():,} seen, {lost} lost, "
            f"{doubled} doubled; {len(samples)} checkpoints, {writer.rotations} rotations; "
            f"growing: {', '.join(growing) or 'none'}; slopes over the second half: {slopes}",
            details={
                "trends": [t.__dict__ | {"bounded": t.bounded} for t in found],
                "samples": [{"at": s.at, **s.series} for s in samples],
                "lost": lost,
                "doubled": doubled,
            },
        ),
        *(
            Row(
                case="19",
                measure=f"soak: {name.removesuffix('_s')} per checkpoint",
                sluice=Stat(values, "s"),
                note=halves(values),
            )
            for name, values in latencies.items()
            if values
        ),
    ]


def halves(values: list[float]) -> str:
    """The medians of the first and the second half of a run's values."""
    first, second = values[: len(values) // 2] or values, values[len(values) // 2 :]
    return (
        f"first half median {statistics.median(first):.2f} s, "
        f"second half {statistics.median(second):.2f} s"
    )


def is_latency(name: str) -> bool:
    return name.endswith("_s")
