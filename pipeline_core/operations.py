"""PipelineOperations: the one facade over a pipeline that the CLI and Airflow both call.

Every public method opens what it needs (the metastore, a collector) and closes it again, so an
instance is cheap to create and safe to create inside an Airflow task (never do I/O in an
operator's ``__init__``).
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from pipeline_core._landing_mode import LandingMode
from pipeline_core._pipeline_views import CheckpointInfo, CollectReport, PipelineStatus
from pipeline_core._stop_request import StopRequest
from pipeline_core.collector import Collector
from pipeline_core.config import PipelineConfig, load_pipeline_config
from pipeline_core.errors import CheckpointError, LandingError
from pipeline_core.landing import (
    JobSubmitter,
    LandingInput,
    SparkConnectSubmitter,
    SparkJobSpec,
    SparkSubmitJob,
    landing_job_spec,
    spark_submit_binary,
)
from pipeline_core.metastore import (
    CheckpointFailedError,
    CheckpointRecord,
    CheckpointState,
    LeaseHolder,
    Metastore,
    as_utc,
)
from pipeline_core.staging_contract import checkpoint_dir

__all__ = [
    "CheckpointInfo",
    "CheckpointState",
    "CollectReport",
    "LandingProgress",
    "PipelineOperations",
    "SparkJobSpec",
]

LOCAL_MASTER = "local[*]"
"""The master of ``sluice land``'s spark-submit when Airflow knows no ``spark_default``."""
log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from pipeline_core.lake import MaintenanceReport


class LandingProgress(Protocol):
    """What :meth:`PipelineOperations.land` tells as it goes (``sluice land`` prints it)."""

    def submitting(self, command: str) -> None:
        """spark-submit (or the job's driver on Spark Connect) starts now, with this command
        line (secrets masked)."""

    def spark_finished(self, seconds: float) -> None:
        """The job ended well after ``seconds``: the lake tables hold the landing."""

    def committing(self, checkpoint_ids: Sequence[int]) -> None:
        """The checkpoints are checked against the tables and committed now."""


class PipelineOperations:
    """Operations on one pipeline, named by its config file.

    ``metastore_url`` and ``lake_dir`` (a folder or an object store's URL) are fallbacks for a
    config that names neither (Airflow passes what its ``sluice_metastore`` and ``sluice_lake``
    connections say): the config's own ``metastore.url`` (or ``$SLUICE_METASTORE_URL``) and
    ``lake.warehouse`` (or ``lake.path``) always win. ``host``,
    by contrast, wins over the config's ``collector.host``: the collector worker task of one
    of ``worker.hosts`` collects as that host. ``migrate``: False for readers that must create
    and change nothing (``sluice status``, ``sluice report``): the metastore must then exist at
    the newest migration, else ``MetastoreNotReadyError``; by default every opening migrates
    it (collecting, landing and the Airflow tasks own it).
    """

    def __init__(
        self,
        config_path: str | Path,
        *,
        metastore_url: str | None = None,
        lake_dir: str | Path | None = None,
        host: str | None = None,
        migrate: bool = True,
    ) -> None:
        self._config_path = Path(config_path)
        self._migrate = migrate
        self._config: PipelineConfig | None = None
        self._default_metastore_url = metastore_url
        self._default_lake = str(lake_dir) if lake_dir is not None else None
        self._host = host

    @property
    def config(self) -> PipelineConfig:
        """The validated config (read on first use). Raises ConfigError."""
        if self._config is None:
            self._config = self._with_defaults(load_pipeline_config(self._config_path))
        return self._config

    def _with_defaults(self, config: PipelineConfig) -> PipelineConfig:
        update: dict[str, Any] = {}
        if self._default_metastore_url and config.metastore.url is None:
            update["metastore"] = config.metastore.model_copy(
                update={"url": self._default_metastore_url}
            )
        if (
            self._default_lake is not None
            and config.lake.path is None
            and config.lake.warehouse is None
        ):
            update["lake"] = config.lake.model_copy(update={"warehouse": self._default_lake})
        if self._host is not None:
            update["collector"] = config.collector.model_copy(update={"host": self._host})
        return config.model_copy(update=update) if update else config

    @contextmanager
    def _metastore(self) -> Iterator[Metastore]:
        metastore = Metastore.open(self.config.metastore_url, migrate=self._migrate)
        try:
            yield metastore
        finally:
            metastore.close()

    # -- checkpoints -------------------------------------------------------------------------

    def request_checkpoint(
        self,
        run_id: str | None = None,
        data_interval: tuple[datetime, datetime] | None = None,
    ) -> CheckpointInfo:
        """Ask for a checkpoint; idempotent per ``run_id`` (a retried task gets the same one)."""
        with self._metastore() as metastore:
            record = metastore.request_checkpoint(self.config.name, run_id, data_interval)
            return self._info(metastore, record)

    def checkpoint(
        self, checkpoint_id: int, *, metastore: Metastore | None = None
    ) -> CheckpointInfo:
        """Raises CheckpointError for an unknown id or one of another pipeline.

        ``metastore``: an open metastore to read from (a poller keeps one open instead of
        opening and migrating one per call); by default one is opened and closed.
        """
        if metastore is not None:
            return self._checkpoint(metastore, checkpoint_id)
        with self._metastore() as opened:
            return self._checkpoint(opened, checkpoint_id)

    def _checkpoint(self, metastore: Metastore, checkpoint_id: int) -> CheckpointInfo:
        return self._info(metastore, self._record(metastore, checkpoint_id))

    def _record(self, metastore: Metastore, checkpoint_id: int) -> CheckpointRecord:
        record = metastore.checkpoint(checkpoint_id)
        if record.pipeline != self.config.name:
            raise CheckpointError(
                f"checkpoint {checkpoint_id} belongs to pipeline {record.pipeline!r}, "
                f"not {self.config.name!r}"
            )
        return record

    def excuse_lapsed_hosts(
        self, checkpoint_id: int, *, metastore: Metastore | None = None
    ) -> tuple[str, ...]:
        """Stop waiting, for a REQUESTED checkpoint, for the hosts whose collector lease has
        lapsed (dead or cut off: what they read but did not seal goes into a later checkpoint
        when they are back), and seal it if every remaining host has sealed its batch.
        Returns the hosts excused; none for a checkpoint no longer REQUESTED.

        ``metastore``: an open metastore to use, as for :meth:`checkpoint`.

        Raises:
            CheckpointError: an unknown id or one of another pipeline.
        """
        if metastore is None:
            with self._metastore() as opened:
                return self.excuse_lapsed_hosts(checkpoint_id, metastore=opened)
        if self._record(metastore, checkpoint_id).state is not CheckpointState.REQUESTED:
            return ()
        excused = tuple(metastore.excuse_lapsed_hosts(checkpoint_id))
        if excused:
            log.warning(
                "checkpoint %d no longer waits for %s: their collectors' leases lapsed",
                checkpoint_id,
                ", ".join(excused),
            )
        return excused

    def landable(self, checkpoint_id: int) -> CheckpointInfo:
        """A checkpoint the Spark job can land (again): SEALED, or COMMITTED already.

        Raises:
            CheckpointFailedError: it is FAILED (the message holds its error).
            CheckpointError: unknown, of another pipeline, or not sealed yet.
        """
        info = self.checkpoint(checkpoint_id)
        info.state.check_landable(checkpoint_id, info.error)
        return info

    def data_interval(self, checkpoint_id: int) -> tuple[datetime, datetime] | None:
        """The data interval of the DAG run that requested the checkpoint, if one was recorded."""
        with self._metastore() as metastore:
            try:
                record = metastore.checkpoint(checkpoint_id)
            except CheckpointError:
                record = None
        if record is None or record.pipeline != self.config.name:
            raise CheckpointError(
                f"there is no checkpoint {checkpoint_id} of pipeline {self.config.name!r}"
            )
        return record.data_interval

    def checkpoints_in_interval(self, start: datetime, end: datetime) -> list[CheckpointInfo]:
        """The sealed or committed checkpoints that belong to ``[start, end)``, oldest first.

        A checkpoint belongs to the interval holding the start of the data interval recorded
        when it was requested (the DAG run's); one requested without an interval (``sluice
        collect``, a worker sealing on stop) belongs to the interval holding its ``sealed_at``.
        Adjacent intervals therefore share no checkpoint. A zero-width interval
        (``start == end``, a trigger timetable's run) holds the checkpoints recorded for
        exactly that instant. Read-only.
        """
        if as_utc(end) < as_utc(start):
            raise ValueError(f"the interval ends ({end}) before it starts ({start})")
        with self._metastore() as metastore:
            records = metastore.checkpoints_in_interval(self.config.name, start, end)
            return [self._info(metastore, record) for record in records]

    def pending_landings(self) -> list[CheckpointInfo]:
        """Sealed checkpoints not yet committed, oldest first."""
        with self._metastore() as metastore:
            records = metastore.checkpoints(self.config.name, [CheckpointState.SEALED])
            return [self._info(metastore, r) for r in records]

    # -- collecting --------------------------------------------------------------------------

    def worker_is_live(self) -> bool:
        """True while a collector holds this pipeline's lease on this host, unless this
        machine can prove it dead (killed: the next collector takes its lease over at once)."""
        with self._metastore() as metastore:
            holder = metastore.lease_holder(self.config.name, self.config.collector.host)
        if holder is None:
            return False
        parsed = LeaseHolder.parse(holder)
        return parsed is None or not parsed.is_dead_on_this_host()

    def collect_once(self, stop: StopRequest | None = None) -> CollectReport:
        """Read every file to its current end, seal every requested checkpoint (requesting one
        when none is pending), and return. Raises CollectorBusyError when a live collector
        holds the lease.

        ``stop``: once it is requested, reading stops and what was read is sealed at once (the
        rest waits for the next run)."""
        with self._metastore() as metastore:
            collector = Collector(self.config, metastore)
            if stop is not None:
                stop.when_requested(collector.stop)
            result = collector.run_once()
            sealed = tuple(
                self._info(metastore, metastore.checkpoint(s.checkpoint_id)) for s in result.sealed
            )
        return CollectReport(sealed, result.files, result.lines, result.bytes, result.seconds)

    def collector(self, metastore: Metastore) -> Collector:
        """A collector for long-running use (``sluice collect``)."""
        return Collector(self.config, metastore)

    def open_metastore(self) -> Metastore:
        return Metastore.open(self.config.metastore_url, migrate=self._migrate)

    # -- landing -----------------------------------------------------------------------------

    def landing_job(
        self,
        checkpoint_ids: Sequence[int],
        landing_id: str,
        mode: LandingMode = LandingMode.APPEND,
        *,
        dry_run: bool = False,
    ) -> SparkJobSpec | None:
        """The spark-submit spec of one job landing ``checkpoint_ids`` into the lake tables, or
        None when none of them is left to land.

        A sealed checkpoint one of whose recorded batches is not in staging any more can never
        be landed: it is marked FAILED with that error (DAG runs waiting for it fail with it). A
        committed one whose staging was removed (``handoff.retain_hours``) is left out with a
        warning: its rows stay in the tables as they are. An empty one (no line sealed: a run
        of an idle schedule) is left out too: the tables hold nothing of it, so a commit
        needs no Spark application for it.

        ``dry_run``: change nothing (no checkpoint marked FAILED, no archive of the job
        written): the spec says what a landing would submit.

        Raises:
            CheckpointFailedError: one is FAILED, or was just marked so.
            CheckpointError: one is unknown, of another pipeline, or not sealed yet.
        """
        inputs = []
        for checkpoint_id in dict.fromkeys(checkpoint_ids):
            info = self.landable(checkpoint_id)
            missing = self.config.staging_area.missing_batches(checkpoint_id, info.hosts)
            if missing is None:
                if info.line_count or info.byte_count:
                    inputs.append(LandingInput(checkpoint_id, info.hosts))
            elif info.state is CheckpointState.COMMITTED:
                log.warning(
                    "checkpoint %d is not landed again: %s; its rows stay in the lake as they are",
                    checkpoint_id,
                    missing,
                )
            else:
                if not dry_run:
                    with self._metastore() as metastore:
                        metastore.fail_checkpoint(checkpoint_id, missing)
                    log.error("checkpoint %d failed: %s", checkpoint_id, missing)
                raise CheckpointFailedError(checkpoint_id, missing)
        if not inputs:
            return None
        return landing_job_spec(self.config, inputs, landing_id, mode, write_archive=not dry_run)

    def land(
        self,
        checkpoint_ids: Sequence[int],
        *,
        landing_id: str | None = None,
        mode: LandingMode = LandingMode.APPEND,
        progress: LandingProgress | None = None,
        spark_connect: str | None = None,
    ) -> list[CheckpointInfo]:
        """Land ``checkpoint_ids`` in one Spark job (the provider's SparkSubmitHook, as the DAG
        does; with ``spark_connect``, an ``sc://`` URL, on that Spark Connect server) and commit
        them, telling ``progress`` each phase. An interrupt (``KeyboardInterrupt``) while Spark
        runs kills the job and is raised again: none of the checkpoints is committed then.

        Raises:
            LandingError: the Spark job failed or what the tables hold does not add up.
        """
        ids = list(dict.fromkeys(checkpoint_ids))
        spec = self.landing_job(ids, landing_id or f"sluice-land-{uuid.uuid4().hex}", mode)
        if spec is not None:
            hook = _submitter(spec, spark_connect)
            if progress is not None:
                progress.submitting(self.spark_submit_command(spec, spark_connect))
            started = time.monotonic()
            try:
                hook.submit(spec.application)
            except KeyboardInterrupt:
                hook.on_kill()  # Spark stops with us: nothing of these checkpoints is committed
                raise
            except Exception as exc:
                raise LandingError(f"landing checkpoints {ids} failed: {exc}") from exc
            if progress is not None:
                progress.spark_finished(time.monotonic() - started)
        if progress is not None:
            progress.committing(ids)
        return self.commit(ids)

    def spark_submit_command(self, spec: SparkJobSpec, spark_connect: str | None = None) -> str:
        """The command line :meth:`land` would run for ``spec`` (secrets masked): spark-submit,
        or with ``spark_connect`` the job's driver (the URL goes in its environment). The
        metastore URL is never on spark-submit's command line (``SparkSubmitJob``)."""
        if spark_connect is not None:
            return SparkConnectSubmitter(spec, spark_connect).command_line()
        return _spark_submit_job(spec).command_line(spec.application)

    def commit(self, checkpoint_ids: Sequence[int]) -> list[CheckpointInfo]:
        """Mark landed checkpoints committed, with what the lake tables hold of each (rows per
        table, rejects per reason, the tables' snapshots, the lines it sealed as
        ``input_lines``, and the events they hold as ``input_events`` where multiline events
        make them fewer).

        Raises:
            LandingError: the tables hold another number of rows + rejects than a checkpoint
                sealed events (it was not landed, or only into some tables). A row is an event:
                a line, or the lines of a multiline event its batches' manifests list.
        """
        ids = list(dict.fromkeys(checkpoint_ids))
        infos = [self.checkpoint(checkpoint_id) for checkpoint_id in ids]
        sources = [source.name for source in self.config.sources]
        # The lake (Iceberg, Arrow) is imported where it is read: a collecting process never is.
        from pipeline_core.lake import lake_location, landed_checkpoints, open_lake

        with open_lake(lake_location(self.config)) as lake:
            landed = landed_checkpoints(lake, sources, ids)
        with self._metastore() as metastore:
            events = {info.checkpoint_id: _sealed_events(metastore, info) for info in infos}
        for info in infos:
            found = landed[info.checkpoint_id]
            sealed = events[info.checkpoint_id]
            if found.lines != sealed:
                counted = "" if sealed == info.line_count else f" ({sealed} events)"
                raise LandingError(
                    f"checkpoint {info.checkpoint_id} sealed {info.line_count} lines{counted} but "
                    f"the lake tables hold {sum(found.rows.values())} rows and "
                    f"{sum(found.rejects.values())} rejects of it"
                )
        committed = []
        with self._metastore() as metastore:
            for info in infos:
                summary = {**landed[info.checkpoint_id].to_json(), "input_lines": info.line_count}
                if events[info.checkpoint_id] != info.line_count:
                    summary["input_events"] = events[info.checkpoint_id]
                record = metastore.commit_checkpoint(info.checkpoint_id, summary)
                committed.append(self._info(metastore, record))
        self.remove_committed_staging()
        return committed

    def remove_committed_staging(self, now: datetime | None = None) -> list[int]:
        """Delete the staging folders of committed checkpoints sealed more than
        ``handoff.retain_hours`` ago; returns their ids."""
        cutoff = (now or datetime.now(timezone.utc)) - timedelta(
            hours=self.config.handoff.retain_hours
        )
        with self._metastore() as metastore:
            records = metastore.checkpoints(self.config.name, [CheckpointState.COMMITTED])
        removed = []
        staging = self.config.staging_area
        for record in records:
            if record.sealed_at is None or as_utc(record.sealed_at) > cutoff:
                continue
            if staging.remove(record.checkpoint_id):
                removed.append(record.checkpoint_id)
        if removed:
            log.info("Removed the staging of committed checkpoints %s", removed)
        return removed

    def maintain(self, day: date | None = None) -> MaintenanceReport:
        """Compact the lake tables (``day``, or every day before today with more than one
        file), expire old snapshots, remove orphan files and the staging of committed
        checkpoints past ``handoff.retain_hours``."""
        from pipeline_core.lake import maintain_lake

        report = maintain_lake(self.config, day)
        self.remove_committed_staging()
        report.forgotten_checkpoints = len(self.forget_old_checkpoints())
        return report

    def forget_old_checkpoints(self, now: datetime | None = None) -> list[int]:
        """Delete the metastore rows of checkpoints committed more than
        ``metastore.retain_days`` ago whose staging is removed (``handoff.retain_hours``):
        the checkpoints, their host rows, batches and byte ranges. Returns their ids."""
        kept = max(
            timedelta(days=self.config.metastore.retain_days),
            timedelta(hours=self.config.handoff.retain_hours),
        )
        before = (now or datetime.now(timezone.utc)) - kept
        with self._metastore() as metastore:
            forgotten = metastore.forget_checkpoints(self.config.name, before)
        if forgotten:
            log.info(
                "Forgot %d checkpoints committed before %s (%d..%d)",
                len(forgotten),
                before.isoformat(timespec="seconds"),
                forgotten[0],
                forgotten[-1],
            )
        return forgotten

    # -- status ------------------------------------------------------------------------------

    def status(self, limit: int = 20) -> PipelineStatus:
        host = self.config.collector.host
        with self._metastore() as metastore:
            records = metastore.checkpoints(self.config.name, limit=limit)
            return PipelineStatus(
                pipeline=self.config.name,
                host=host,
                files=tuple(metastore.files(self.config.name, host)),
                checkpoints=tuple(self._info(metastore, r) for r in records),
                lease_holder=metastore.lease_holder(self.config.name, host),
            )

    def _info(self, metastore: Metastore, record: CheckpointRecord) -> CheckpointInfo:
        batches = metastore.batches(record.checkpoint_id)
        return CheckpointInfo(
            checkpoint_id=record.checkpoint_id,
            pipeline=record.pipeline,
            state=record.state,
            run_id=record.run_id,
            staging_dir=checkpoint_dir(
                self.config.seal_dir, self.config.name, record.checkpoint_id
            ),
            staging_url=self.config.staging_area.checkpoint_url(record.checkpoint_id),
            line_count=sum(b.line_count for b in batches),
            byte_count=sum(b.byte_count for b in batches),
            batch_ids=tuple(b.batch_id for b in batches if b.batch_id is not None),
            hosts=tuple(sorted(b.host for b in batches)),
            requested_at=record.requested_at,
            sealed_at=record.sealed_at,
            committed_at=record.committed_at,
            landing=record.landing,
            error=record.error,
            data_interval=record.data_interval,
        )


def _submitter(spec: SparkJobSpec, spark_connect: str | None) -> JobSubmitter:
    if spark_connect is not None:
        return SparkConnectSubmitter(spec, spark_connect, logger=log)
    return _spark_submit_job(spec)


def _spark_submit_job(spec: SparkJobSpec) -> SparkSubmitJob:
    """``spec`` through the Spark provider's hook on ``spark_default`` (``local[*]`` when
    Airflow knows no such connection), with the spark-submit of this environment."""
    arguments = {**spec.hook_arguments(), "spark_binary": spark_submit_binary()}
    return SparkSubmitJob(arguments, default_master=LOCAL_MASTER)


def _sealed_events(metastore: Metastore, info: CheckpointInfo) -> int:
    """The events a checkpoint's batches hold, which land as its rows + rejects: its lines,
    less the lines that continue a multiline event (each batch's ``event_count``)."""
    return sum(batch.event_count for batch in metastore.batches(info.checkpoint_id))
