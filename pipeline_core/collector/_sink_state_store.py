"""Sink penalty/backoff state kept in the metastore, written coalesced."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping

from pipeline_core.metastore import Metastore, SinkStateRecord
from pipeline_core.sinks import SinkHealth

log = logging.getLogger(__name__)

FLUSH_INTERVAL_SECONDS = 1.0
"""At most one metastore write per this many seconds, whatever the rate of state changes."""


class MetastoreSinkStateStore:
    """A ``SinkStateStore`` over the metastore's ``sluice_sink_states`` table.

    ``save`` only records the newest state of a sink in memory; the dirty states are written in
    one transaction when ``FLUSH_INTERVAL_SECONDS`` have passed since the last write (checked on
    the next ``save``) and on ``flush()``, which the collector calls at every checkpoint and on
    stop. A sink that flaps on every batch therefore costs one write a second, not one a batch;
    a crash loses at most the last second of penalty bookkeeping, never data.

    Threading model: each sink group's delivery thread calls ``load``/``save`` for its own
    group; the mailbox thread calls ``flush``. One lock guards the dirty states.
    """

    def __init__(
        self,
        metastore: Metastore,
        pipeline: str,
        host: str,
        *,
        flush_interval: float = FLUSH_INTERVAL_SECONDS,
    ) -> None:
        self._metastore = metastore
        self._pipeline = pipeline
        self._host = host
        self._flush_interval = flush_interval
        self._lock = threading.Lock()
        self._dirty: dict[tuple[str, str], SinkHealth] = {}
        self._last_flush = time.monotonic()
        self.writes = 0

    def load(self, group: str) -> Mapping[str, SinkHealth]:
        return {
            record.sink: SinkHealth(
                consecutive_failures=record.consecutive_failures,
                excluded_until=record.excluded_until,
                last_error=record.last_error,
                last_failure_at=record.last_failure_at,
            )
            for record in self._metastore.sink_states(self._pipeline, self._host)
            if record.sink_group == group
        }

    def save(self, group: str, sink: str, health: SinkHealth) -> None:
        with self._lock:
            self._dirty[(group, sink)] = health
            due = time.monotonic() - self._last_flush >= self._flush_interval
        if due:
            self.flush()

    def flush(self) -> None:
        """Write every dirty state now (one transaction); a failure is logged and retried
        with the next flush."""
        with self._lock:
            dirty, self._dirty = self._dirty, {}
            self._last_flush = time.monotonic()
        if not dirty:
            return
        records = [
            SinkStateRecord(
                sink_group=group,
                sink=sink,
                consecutive_failures=health.consecutive_failures,
                excluded_until=health.excluded_until,
                last_failure_at=health.last_failure_at,
                last_error=health.last_error,
            )
            for (group, sink), health in dirty.items()
        ]
        try:
            self._metastore.save_sink_states(self._pipeline, self._host, records)
            self.writes += 1
        except Exception as exc:
            log.warning("cannot save sink states (retried at the next flush): %s", exc)
            with self._lock:
                for key, health in dirty.items():
                    self._dirty.setdefault(key, health)
