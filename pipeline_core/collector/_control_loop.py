"""The collector's control thread: leases, checkpoint requests, the acker's sweep timer."""

from __future__ import annotations

import contextlib
import functools
import logging
import math
import os
import queue
import select
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from pipeline_core.collector._clock_watch import ClockWatch
from pipeline_core.collector._lifecycle import CollectorMode, PipelineState
from pipeline_core.collector._outage_log import OutageLog
from pipeline_core.collector._pipeline import PipelineRuntime
from pipeline_core.collector._readiness import ControlStatus, LeaseStatus
from pipeline_core.collector._request_watch import REQUEST_PROBE_SECONDS, RequestWatch
from pipeline_core.metastore import Metastore

log = logging.getLogger(__name__)

CONTROL_POLL_SECONDS = 1.0
"""How often the control thread queries the metastore (leases, checkpoint requests)."""

REFORWARD_SECONDS = 5.0
"""A request still waiting for this host this long after it was forwarded is forwarded again.
The mailbox drops a request it cannot act on yet (the pipeline being served again, say) and
ignores one whose barrier is under way, so forwarding again is harmless and a dropped request
never waits for the collector's stop."""


@dataclass(frozen=True)
class WatchedPipeline:
    """What the control thread needs of a pipeline: whose lease to renew, where requests are."""

    name: str
    host: str
    holder: str
    metastore: Metastore
    lease_seconds: float
    leased_at: float | None = None
    """When (``time.monotonic()``) the mailbox thread took the lease; None: just now."""


@dataclass(frozen=True)
class WatchList:
    """What the control thread watches: the pipelines not DONE, and how often the acker's
    timeout sweep is due (a third of the shortest acker timeout, at most a second)."""

    pipelines: tuple[WatchedPipeline, ...]
    sweep_every: float

    @classmethod
    def of(cls, runtimes: Iterable[PipelineRuntime]) -> WatchList:
        """Taken on the mailbox thread, which owns the runtimes."""
        served = list(runtimes)
        return cls(
            pipelines=tuple(
                WatchedPipeline(
                    runtime.name,
                    runtime.host,
                    runtime.holder,
                    runtime.metastore,
                    runtime.config.collector.lease_seconds,
                    runtime.lease_acquired_at,
                )
                for runtime in served
                if runtime.state is not PipelineState.DONE
            ),
            sweep_every=min(
                [
                    CONTROL_POLL_SECONDS,
                    *(runtime.config.collector.acker_timeout_s / 3 for runtime in served),
                ]
            ),
        )


class ControlLoop:
    """Renews the leases; in continuous mode, forwards new checkpoint requests; sends the
    acker's timeout sweep (reading may be suspended meanwhile, so the sweep cannot wait for
    it).

    Leases are looked at once a second (``CONTROL_POLL_SECONDS``) and renewed when due. The
    thread waits on each metastore's :class:`RequestProbe` (its descriptor: inotify on SQLite's
    folder, PostgreSQL's ``LISTEN`` socket; behind a transaction-mode pooler, a small query
    every half second; another probe without one is asked every ``REQUEST_PROBE_SECONDS``),
    which tells cheaply whether a request may have arrived, and only then is the metastore
    queried for requests, at once; besides, it is queried every ``REQUEST_QUERY_SECONDS`` if
    its probe sees every request (a descriptor, or a query), else once a second
    (:class:`RequestWatch` decides). A metastore
    that fails is logged and tried again at a later turn: nothing ends the loop but
    :meth:`stop`.

    What it sends, it sends through the callables it is given, which put mail: ``sweep()``,
    ``request_checkpoint(pipeline, checkpoint_id)`` (each request once, and again every
    ``REFORWARD_SECONDS`` while it still waits for this host) and
    ``lease_lost(pipeline)`` (another collector took the lease over).

    What it learns of each watched pipeline's lease and metastore it publishes as a
    :class:`ControlStatus` (:attr:`status`), which readiness probes read.

    Threading model: its own thread. :meth:`watch` and :meth:`stop` are called from the mailbox
    thread and only put into the loop's inbox: the loop never reads collector state, it works
    from the last :class:`WatchList` it received. Its own fields (lease renewals, requests
    forwarded, probes, lease statuses) belong to its thread; :attr:`status` is an immutable
    value it replaces whole, read from any thread.
    """

    def __init__(
        self,
        mode: CollectorMode,
        *,
        sweep: Callable[[], None],
        request_checkpoint: Callable[[str, int], None],
        lease_lost: Callable[[str], None],
    ) -> None:
        self._mode = mode
        self._sweep = sweep
        self._request_checkpoint = request_checkpoint
        self._lease_lost = lease_lost
        self._inbox: queue.SimpleQueue[WatchList | None] = queue.SimpleQueue()
        self._wake_read, self._wake_write = os.pipe()
        """Written when the inbox gets a message: the thread waits on it with the probes'."""
        for end in (self._wake_read, self._wake_write):
            os.set_blocking(end, False)
        self._pipe_lock = threading.Lock()
        self._pipe_closed = False
        """Set, under the lock, when the thread closed its pipe: a wake after that writes
        nothing (the pipe's numbers may already name another descriptor: a socket, a file)."""
        self._thread = threading.Thread(target=self._run, name="sluice-control", daemon=True)
        self._watching = WatchList((), CONTROL_POLL_SECONDS)
        self._renewals: dict[str, float] = {}
        self._outages = OutageLog(log)
        self._clock = ClockWatch()
        self._forwarded: dict[tuple[str, int], float] = {}
        self._requests = RequestWatch(continuous=mode is CollectorMode.CONTINUOUS)
        self._leases: dict[str, LeaseStatus] = {}
        self._waiting_since: float | None = None
        self._status = ControlStatus()

    @property
    def status(self) -> ControlStatus:
        """The leases and metastores as last seen (any thread)."""
        return self._status

    @property
    def alive(self) -> bool:
        """Whether its thread runs (any thread)."""
        return self._thread.is_alive()

    def watch(self, watching: WatchList) -> None:
        """Watch these pipelines from now on (mailbox thread, at each change of the
        registry)."""
        self._inbox.put(watching)
        self._wake()

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """End the loop soon (any thread); :meth:`join` waits for it."""
        self._inbox.put(None)
        self._wake()

    def _wake(self) -> None:
        with self._pipe_lock, contextlib.suppress(BlockingIOError, OSError):
            if not self._pipe_closed:  # full: a wake is pending anyway
                os.write(self._wake_write, b"x")

    def join(self, timeout: float) -> None:
        if self._thread.is_alive():
            self._thread.join(timeout)

    # -- the control thread ------------------------------------------------------------------

    def _run(self) -> None:
        now = time.monotonic()
        next_sweep = now + self._watching.sweep_every
        next_poll = now + CONTROL_POLL_SECONDS
        try:
            while self._wait(min(next_sweep, next_poll, self._next_renewal())):
                now = time.monotonic()
                # A shorter acker timeout (a pipeline added) takes effect at once.
                next_sweep = min(next_sweep, now + self._watching.sweep_every)
                sweeping = now >= next_sweep
                if sweeping:
                    next_sweep = now + self._watching.sweep_every
                polling = now >= next_poll
                if polling:
                    next_poll = now + CONTROL_POLL_SECONDS
                renewing = polling or now >= self._next_renewal()
                try:
                    if polling:
                        self._clock.look()
                    if sweeping:
                        self._sweep()
                    self._turn(polling, renewing)
                except Exception as exc:  # a metastore briefly unreachable: next turn
                    log.warning("control loop: %s", exc)
        finally:
            self._requests.close()
            with self._pipe_lock:
                self._pipe_closed = True
                for end in (self._wake_read, self._wake_write):
                    os.close(end)

    def _wait(self, deadline: float) -> bool:
        """Wait until ``deadline`` (``time.monotonic()``), a message in the inbox, or a probe
        saying a request may have come (or a look at the probes is due: :class:`RequestWatch`);
        take what came. False once stopped."""
        now = time.monotonic()
        metastores = [pipeline.metastore for pipeline in self._watching.pipelines]
        probes, look_by = self._requests.waiting(metastores, now)
        timeout = max(min(deadline, look_by) - now, 0.0)
        try:
            readable, _, _ = select.select([self._wake_read, *probes], [], [], timeout)
        except (OSError, ValueError):  # a probe's descriptor closed under it: look again soon
            readable = []
            time.sleep(min(timeout, REQUEST_PROBE_SECONDS))
        if any(descriptor != self._wake_read for descriptor in readable):
            self._requests.woken(time.monotonic())
        if self._wake_read in readable:
            with contextlib.suppress(BlockingIOError, OSError):
                while os.read(self._wake_read, 4096):
                    pass
        return self._receive()

    def _receive(self) -> bool:
        """Take what the inbox holds. False once stopped."""
        try:
            message = self._inbox.get_nowait()
            while True:
                if message is None:
                    return False
                self._watching = message
                self._track_leases(message)
                message = self._inbox.get_nowait()
        except queue.Empty:
            return True

    def _track_leases(self, watching: WatchList) -> None:
        """Keep the statuses of the pipelines still watched; start those of new ones from the
        moment their lease was taken."""
        now = time.monotonic()
        leases: dict[str, LeaseStatus] = {}
        for pipeline in watching.pipelines:
            taken = pipeline.leased_at if pipeline.leased_at is not None else now
            known = self._leases.get(pipeline.name)
            if known is None or known.host != pipeline.host:
                known = LeaseStatus(
                    pipeline.name, pipeline.host, taken + pipeline.lease_seconds, taken
                )
            elif pipeline.leased_at is not None and taken + pipeline.lease_seconds > (
                known.lease_until
            ):
                known = known.renewed(taken, pipeline.lease_seconds)  # taken again: replaced
            leases[pipeline.name] = known
        self._leases = leases
        self._renewals = {name: due for name, due in self._renewals.items() if name in leases}
        self._publish()

    def _publish(self) -> None:
        self._status = ControlStatus(tuple(self._leases.values()), self._waiting_since)

    def _next_renewal(self) -> float:
        """When (``time.monotonic()``) the first lease watched is due for renewal."""
        return min(self._renewals.values(), default=math.inf)

    def _turn(self, polling: bool, renewing: bool) -> None:
        watched = self._watching.pipelines
        # The probes are asked at every turn: a poll asks a metastore whose probe wakes the
        # thread only every REQUEST_QUERY_SECONDS.
        probed = self._requests.changed((p.metastore for p in watched), time.monotonic())
        if not watched or not (renewing or probed):
            return
        self._waiting_since = time.monotonic()  # a query that hangs shows
        self._publish()
        failed = self._renew_leases(watched) if renewing else set()
        asking: dict[int, list[WatchedPipeline]] = {}
        now = time.monotonic()
        for pipeline in watched:
            key = id(pipeline.metastore)
            if pipeline.name not in failed and (
                key in probed or (polling and self._requests.query_due(pipeline.metastore, now))
            ):
                asking.setdefault(key, []).append(pipeline)
        for pipelines in asking.values():
            self._requests.asked(pipelines[0].metastore, now)
            try:
                self._forward_requests(pipelines)
            except Exception as exc:
                for pipeline in pipelines:
                    self._failed(pipeline, exc)
        self._waiting_since = None
        self._publish()

    def _failed(self, pipeline: WatchedPipeline, exc: Exception) -> None:
        self._outages.failed(pipeline.name, exc, time.monotonic())
        self._note(pipeline, functools.partial(LeaseStatus.failed, error=exc))

    def _note(
        self, pipeline: WatchedPipeline, change: Callable[[LeaseStatus], LeaseStatus]
    ) -> None:
        known = self._leases.get(pipeline.name)
        if known is not None:
            self._leases[pipeline.name] = change(known)

    def _renew_leases(self, watched: tuple[WatchedPipeline, ...]) -> set[str]:
        """Renew the leases that are due, a metastore's together in one transaction: once one
        of its pipelines is due, every one due within half its period is renewed with it (a
        lease renewed early loses nothing), so a collector serving a hundred pipelines renews
        them in one transaction every so often instead of one each. Returns the pipelines whose
        metastore failed.

        A lease is due a third of its length after the last renewal *began* (the database
        measures it from its transaction's start, so a renewal slow to commit does not push
        the next one later), whether or not a poll is due then (the thread wakes for it); a
        failed one is tried again at the next poll."""
        now = time.monotonic()
        by_metastore: dict[int, list[WatchedPipeline]] = {}
        for pipeline in watched:
            by_metastore.setdefault(id(pipeline.metastore), []).append(pipeline)
        failed: set[str] = set()
        for pipelines in by_metastore.values():
            every = {p.name: max(0.5, p.lease_seconds / 3) for p in pipelines}
            due_at = {
                p.name: self._renewals.setdefault(p.name, now + every[p.name]) for p in pipelines
            }
            if all(now < due_at[p.name] for p in pipelines):
                continue
            due = [p for p in pipelines if now >= due_at[p.name] - every[p.name] / 2]
            try:
                granted = due[0].metastore.acquire_leases(
                    [(p.name, p.host, p.holder, p.lease_seconds) for p in due]
                )
            except Exception as exc:  # the metastore may be briefly unreachable
                for pipeline in due:
                    self._failed(pipeline, exc)
                    failed.add(pipeline.name)
                    self._renew_at_next_poll(pipeline.name)
                continue
            for pipeline, taken in zip(due, granted, strict=True):
                self._renewed(pipeline, taken, now, every[pipeline.name])
        return failed

    def _renewed(self, pipeline: WatchedPipeline, taken: bool, now: float, every: float) -> None:
        if not taken:  # asked again at the next poll until the mailbox stops watching it
            self._renew_at_next_poll(pipeline.name)
            self._note(pipeline, lambda status: status.taken_over().reached(now))
            self._publish()  # before the collector hears of it
            self._lease_lost(pipeline.name)
            return
        self._note(pipeline, lambda status: status.renewed(now, pipeline.lease_seconds))
        self._outages.reached(pipeline.name, time.monotonic())
        self._renewals[pipeline.name] = now + every

    def _renew_at_next_poll(self, name: str) -> None:
        """Ask again for a lease that failed or was refused at the next poll, not at once."""
        self._renewals[name] = time.monotonic() + CONTROL_POLL_SECONDS

    def _forward_requests(self, pipelines: list[WatchedPipeline]) -> None:
        """Forward the requests waiting for the pipelines (of one metastore: one query)."""
        if self._mode is not CollectorMode.CONTINUOUS:
            return
        asked = time.monotonic()
        waiting = pipelines[0].metastore.unsealed_for_hosts((p.name, p.host) for p in pipelines)
        for pipeline in pipelines:
            try:
                self._forward(pipeline, waiting[(pipeline.name, pipeline.host)], asked)
            except Exception as exc:  # this pipeline's only
                self._failed(pipeline, exc)

    def _forward(self, pipeline: WatchedPipeline, waiting: list[int], asked: float) -> None:
        self._note(pipeline, lambda status: status.reached(asked))
        self._outages.reached(pipeline.name, time.monotonic())
        now = time.monotonic()
        for checkpoint_id in waiting:
            key = (pipeline.name, checkpoint_id)
            forwarded = self._forwarded.get(key)
            if forwarded is None or now - forwarded >= REFORWARD_SECONDS:
                if forwarded is not None:
                    log.info(
                        "checkpoint %d of %s still waits for this host: forwarded again",
                        checkpoint_id,
                        pipeline.name,
                    )
                self._forwarded[key] = now
                self._request_checkpoint(pipeline.name, checkpoint_id)
        for key in [k for k in self._forwarded if k[0] == pipeline.name and k[1] not in waiting]:
            del self._forwarded[key]
