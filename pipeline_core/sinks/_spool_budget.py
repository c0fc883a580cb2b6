"""How many bytes the local spool of a collector holds, against its bound."""

from __future__ import annotations

import threading


class SpoolBudget:
    """The bytes a pipeline's spool holds (unsealed parts plus sealed batches waiting for
    their upload) against ``limit``: reading pauses while :attr:`full`.

    Threading model: :meth:`add` is called by the handoff sink group's thread as it writes,
    :meth:`free` by the upload thread (and the handoff sink's thread when it drops unsealed
    parts), :attr:`used` and :attr:`full` are read by the mailbox thread (reading) and by
    metrics from any thread. The count is guarded by its own lock; nothing else is shared.
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._lock = threading.Lock()
        self._used = 0  # guarded by _lock
        self._times_full = 0  # guarded by _lock

    def add(self, nbytes: int) -> None:
        """``nbytes`` more are on disk."""
        with self._lock:
            was_full = self._used >= self.limit
            self._used += nbytes
            if not was_full and self._used >= self.limit:
                self._times_full += 1

    def free(self, nbytes: int) -> None:
        """``nbytes`` left the disk (uploaded and removed, or dropped unsealed)."""
        with self._lock:
            self._used = max(0, self._used - nbytes)

    @property
    def used(self) -> int:
        with self._lock:
            return self._used

    @property
    def full(self) -> bool:
        """Whether the spool is at its bound: reading must wait for uploads."""
        with self._lock:
            return self._used >= self.limit

    @property
    def times_full(self) -> int:
        """How often the spool reached its bound."""
        with self._lock:
            return self._times_full
