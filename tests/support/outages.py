"""A server a test takes down for a while: stopped now, started again on a thread of its own."""

from __future__ import annotations

import threading
import time
from abc import ABC, abstractmethod


class Stoppable(ABC):
    """A server with :meth:`stop` and :meth:`start`, and :meth:`outage` of them."""

    def __init__(self) -> None:
        self.outages: list[tuple[float, float]] = []
        """Each stop and the start that ended it, as ``time.monotonic()`` instants."""

    @abstractmethod
    def start(self) -> object: ...

    @abstractmethod
    def stop(self) -> None: ...

    def outage(self, seconds: float) -> threading.Event:
        """Stop now, start again ``seconds`` after the stop began, on a thread of its own;
        the event is set once it is back (the outage then in :attr:`outages`)."""
        stopped = time.monotonic()
        self.stop()
        back = threading.Event()

        def restart() -> None:
            time.sleep(max(0.0, seconds - (time.monotonic() - stopped)))
            try:
                self.start()
            finally:
                self.outages.append((stopped, time.monotonic()))
                back.set()

        threading.Thread(target=restart, name=f"{type(self).__name__}-restart", daemon=True).start()
        return back
