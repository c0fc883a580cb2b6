"""When the control thread asks a metastore for checkpoint requests: at once when its
:class:`RequestProbe` says one may have come, and otherwise now and then as a safety net.

A probe is asked when its descriptor wakes the thread (then a few times soon after:
``PROBE_RECHECKS_SECONDS``), every ``look_every`` seconds when it has its own period (a probe
that queries), else at every turn and at least every ``REQUEST_PROBE_SECONDS``. A metastore
whose probe has a descriptor or a period of its own is queried every
``REQUEST_QUERY_SECONDS`` besides; any other at every poll of the control thread."""

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
"""How often a metastore whose probe has a descriptor (or looks on a period of its own: a probe
that queries behind a transaction-mode pooler) is asked for requests anyway: the probe sees
each request, so the query is only a safety net (a metastore without such a probe is asked at
every poll of the control thread). Asked once a second, the query was most of an idle
collector's control thread: about 15 ms of CPU a second for a hundred pipelines; every 5 s, a
quarter of it (0.03 % of a core)."""

PROBE_RECHECKS_SECONDS = (0.005, 0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.0)
"""After a probe's descriptor woke the thread, the probes are asked again so long after the
wake: the descriptor wakes on a commit's first write, and the commit shows only once it is
done, which under load can be a long moment later (SQLite writes its log, syncs it, then
marks the commit: the sync of a busy disk took over 50 ms in bench case 14, and a request
then waited for the next look, 250 ms on). Each look is two ``stat`` calls and a ``PRAGMA``
(about 0.1 ms)."""


_EARLY_SECONDS = 0.001
"""A look due this little later is taken now: a wait can end a hair before its timeout."""


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
        self._next_looks: dict[int, float] = {}
        """When (``time.monotonic()``) to ask again each probe with a period of its own
        (``RequestProbe.look_every``), by its metastore's ``id``."""

    def waiting(self, metastores: Iterable[Metastore], now: float) -> tuple[list[int], float]:
        """What to wait on before the next look: the probes' descriptors, and the latest time
        (``time.monotonic()``, ``inf``: none) at which to look anyway (a probe without a
        descriptor, or a wake to look at again)."""
        while self._rechecks and now >= self._rechecks[0]:
            self._rechecks.pop(0)
        look_by = self._rechecks[0] if self._rechecks else float("inf")
        descriptors: list[int] = []
        for metastore, probe in self._watched(metastores):
            descriptor = probe.fileno()
            if descriptor is not None:
                descriptors.append(descriptor)
            elif probe.look_every is not None:
                look_by = min(look_by, self._next_looks.get(id(metastore), now))
            elif probe.signals:
                look_by = min(look_by, now + REQUEST_PROBE_SECONDS)
        return descriptors, look_by

    def woken(self, now: float) -> None:
        """A probe's descriptor woke the thread (at ``now``): look again a few times soon."""
        self._rechecks = [now + delay for delay in PROBE_RECHECKS_SECONDS]

    def changed(self, metastores: Iterable[Metastore], now: float) -> set[int]:
        """The metastores (by ``id``) whose probe says a request may have arrived (a probe
        with a period of its own is asked only once its period has passed since ``now`` of
        its last look)."""
        changed: set[int] = set()
        for metastore, probe in self._watched(metastores):
            every = probe.look_every
            if every is not None:
                if now < self._next_looks.get(id(metastore), now) - _EARLY_SECONDS:
                    continue
                self._next_looks[id(metastore)] = now + every
            if probe.changed():
                changed.add(id(metastore))
        return changed

    def query_due(self, metastore: Metastore, now: float) -> bool:
        """Whether a poll of the control thread asks ``metastore`` for requests: every poll
        unless its probe sees every request (it wakes the thread, or looks on a period of its
        own), then every ``REQUEST_QUERY_SECONDS``."""
        probe = self._probe(metastore) if self._continuous else None
        if probe is None or (probe.fileno() is None and probe.look_every is None):
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
