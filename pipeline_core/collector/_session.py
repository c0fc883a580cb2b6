"""``CollectorSession``: one run of a collector over pipeline configs, with the metastores it
needs, bounded by a deadline or a stop from any thread.

Every way to collect goes through it: ``sluice collect`` (by way of
:class:`~pipeline_core.collector.CollectorService`, which adds config reloads and metrics),
``PipelineOperations.collect_once`` and Airflow's collector worker task.

Threading model: :meth:`run` on the thread that becomes the collector's mailbox thread;
:meth:`add`, :meth:`replace` and :meth:`remove` before the run or from any thread during it;
:meth:`stop` from any thread, a signal handler included (the collector is stopped from a thread
of its own, never inside the handler, which may have interrupted the mailbox thread while it
holds a lock the stop needs).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable

from pipeline_core._compat import StrEnum
from pipeline_core.collector._collector import Collector
from pipeline_core.collector._results import CollectorResult
from pipeline_core.config import PipelineConfig
from pipeline_core.metastore import Metastore, MetastorePooling


class StopCause(StrEnum):
    """Why a session's run ended before its files' end (continuous runs end no other way)."""

    DEADLINE = "deadline"
    """The ``until`` given to :meth:`CollectorSession.run` came."""
    REQUEST = "request"
    """:meth:`CollectorSession.stop` was called (a signal, a task being killed)."""


class CollectorSession:
    """A collector serving ``configs``, each pipeline on its config's metastore (one engine
    per metastore URL and pooling, closed when the run ends)."""

    def __init__(self, configs: Iterable[PipelineConfig] = ()) -> None:
        self.collector = Collector()
        self._metastores: dict[tuple[str, MetastorePooling], Metastore] = {}
        self._stopped_by: StopCause | None = None
        try:
            for config in configs:
                self.add(config)
        except BaseException:
            self.close()
            raise

    @property
    def stopped_by(self) -> StopCause | None:
        """Why the run was stopped; None while it was not (any thread)."""
        return self._stopped_by

    def add(self, config: PipelineConfig) -> None:
        self.collector.add_pipeline(config, self._metastore(config))

    def replace(self, config: PipelineConfig) -> None:
        self.collector.replace_pipeline(config, self._metastore(config))

    def remove(self, name: str) -> None:
        self.collector.remove_pipeline(name)

    def run(self, *, once: bool = False, until: float | None = None) -> CollectorResult:
        """Collect, then close the metastores.

        ``once``: read every file to its current end, seal every requested checkpoint
        (requesting one when none is pending) and return; otherwise tail until stopped.
        ``until``: a :func:`time.monotonic` deadline at which the run is stopped (what was
        read is sealed). A stop that came before the run ends it at once.
        """
        ended = threading.Event()
        if until is not None:
            threading.Thread(
                target=self._stop_at, args=(until, ended), name="sluice-run-until", daemon=True
            ).start()
        try:
            if self._stopped_by is not None:
                self.collector.stop()
            return self.collector.run_once() if once else self.collector.run()
        finally:
            ended.set()
            self.close()

    def stop(self, cause: StopCause = StopCause.REQUEST) -> None:
        """Seal what has been read and end the run, without waiting for it (any thread, also a
        signal handler). The first cause is the one kept."""
        if self._stopped_by is None:  # no lock: a signal handler may have interrupted a stop
            self._stopped_by = cause
        threading.Thread(target=self.collector.stop, name="sluice-stop", daemon=True).start()

    def close(self) -> None:
        for metastore in self._metastores.values():
            metastore.close()
        self._metastores.clear()

    def _stop_at(self, deadline: float, ended: threading.Event) -> None:
        """Stop the run at ``deadline`` unless it ends first.

        Not ``threading.Timer``: a timed wait may end early when the wall clock steps forward
        (Python 3.10 times lock waits on the system clock), and a timer fires whenever its
        one wait ends. This waits again until the monotonic clock says the time is up.
        """
        while not ended.wait(max(0.0, deadline - time.monotonic())):
            if time.monotonic() >= deadline:
                self.stop(StopCause.DEADLINE)
                return

    def _metastore(self, config: PipelineConfig) -> Metastore:
        key = (config.metastore_url, config.metastore.pooling)
        if key not in self._metastores:
            self._metastores[key] = Metastore.open(key[0], pooling=key[1])
        return self._metastores[key]
