"""When the control thread asks a metastore for checkpoint requests: at once when its
:class:`RequestProbe` says one may have come, and otherwise now and then as a safety net."""

from __future__ import annotations

from collections.abc import Iterable

from pipeline_core.metastore import Metastore, RequestProbe

REQUEST_PROBE_SECONDS = 0.1
"""How often a request probe that has no descriptor to wait on is asked whether a checkpoint
was requested. Each look wakes a thread (about 0.2 ms of CPU here): 50 a second were most of
an idle collector's cost (0.7 % of a core), 10 add 50 ms on average to a checkpoint's request
-> sealed. A probe with a descriptor (inotify on SQLite's folder, PostgreSQL's ``LISTEN``
socket) wakes the thread when a request may have come, and costs nothing otherwise."""

REQUEST_QUERY_SECONDS = 15.0
"""How often a metastore whose probe has a descriptor is asked for requests anyway: the probe
wakes the thread for each request, so the query is only a safety net (a metastore without
such a probe is asked at every poll of the control thread). Asked once a second, the query was
most of an idle collector's control thread: about 15 ms of CPU a second for a hundred
pipelines; every 5 s, a quarter of it (0.03 % of a core)."""

PROBE_RECHECKS_SECONDS = (0.005, 0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.0)
"""After a probe's descriptor woke the thread, the probes are asked again so long after the
wake: the descriptor wakes on a commit's first write, and the commit shows only once it is
done, which under load can be a long moment later (SQLite writes its log, syncs it, then
marks the commit: the sync of a busy disk took over 50 ms in bench case 14, and a request
then waited for the next look, 250 ms on). Each look is two ``stat`` calls and a ``PRAGMA``
(about 0.1 ms)."""


class RequestWatch:
    """The request probes of the metastores a control thread watches, and when to ask each
    metastore for requests.

    Threading model: used by the control thread only (the probes open their connections on
    it). In one-shot mode nothing is probed and every poll asks (a one-shot collector forwards
    no request anyway).
    """

    def __init__(self, *, continuous: bool) -> None:
        self._continuous = continuous
        self._probes: dict[int, RequestProbe] = {}
        self._rechecks: list[float] = []
        """When (``time.monotonic()``) to ask the probes again after a wake, soonest first."""
        self._asked: dict[int, float] = {}
        """When (``time.monotonic()``) each metastore (by ``id``) was last asked."""

    def waiting(self, metastores: Iterable[Metastore], now: float) -> tuple[list[int], float]:
        """What to wait on before the next look: the probes' descriptors, and the latest time
        (``time.monotonic()``, ``inf``: none) at which to look anyway (a probe without a
        descriptor, or a wake to look at again)."""
        while self._rechecks and now >= self._rechecks[0]:
            self._rechecks.pop(0)
        look_by = self._rechecks[0] if self._rechecks else float("inf")
        descriptors: list[int] = []
        for _, probe in self._watched(metastores):
            descriptor = probe.fileno()
            if descriptor is not None:
                descriptors.append(descriptor)
            elif probe.signals:
                look_by = min(look_by, now + REQUEST_PROBE_SECONDS)
        return descriptors, look_by

    def woken(self, now: float) -> None:
        """A probe's descriptor woke the thread (at ``now``): look again a few times soon."""
        self._rechecks = [now + delay for delay in PROBE_RECHECKS_SECONDS]

    def changed(self, metastores: Iterable[Metastore]) -> set[int]:
        """The metastores (by ``id``) whose probe says a request may have arrived."""
        return {id(m) for m, probe in self._watched(metastores) if probe.changed()}

    def query_due(self, metastore: Metastore, now: float) -> bool:
        """Whether a poll of the control thread asks ``metastore`` for requests: every poll
        unless its probe wakes the thread, then every ``REQUEST_QUERY_SECONDS``."""
        if not self._continuous or self._probe(metastore).fileno() is None:
            return True
        last = self._asked.get(id(metastore))
        return last is None or now - last >= REQUEST_QUERY_SECONDS

    def asked(self, metastore: Metastore, now: float) -> None:
        """``metastore`` was asked for requests at ``now``."""
        self._asked[id(metastore)] = now

    def close(self) -> None:
        for probe in self._probes.values():
            probe.close()
        self._probes.clear()

    def _watched(self, metastores: Iterable[Metastore]) -> list[tuple[Metastore, RequestProbe]]:
        """Each of ``metastores`` once, with its probe (none in one-shot mode)."""
        if not self._continuous:
            return []
        return [(m, self._probe(m)) for m in {id(m): m for m in metastores}.values()]

    def _probe(self, metastore: Metastore) -> RequestProbe:
        probe = self._probes.get(id(metastore))
        if probe is None:
            probe = self._probes[id(metastore)] = metastore.request_probe()
        return probe
