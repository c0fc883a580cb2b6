"""SIGTERM and SIGINT as a request to stop, kept from the first moment a command can take them.

``sluice collect`` installs a :class:`StopRequest` before its slow start-up (imports, configs,
the metastore): a stop signal that arrives meanwhile is kept instead of ending the process
(exit 143), and what is built afterwards is stopped as soon as it exists
(:meth:`StopRequest.when_requested`). Nothing but the standard library is imported here.
"""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Callable, Iterable
from types import FrameType

log = logging.getLogger(__name__)

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)

_Handler = Callable[[int, FrameType | None], object] | int | signal.Handlers | None


class StopRequest:
    """Whether a stop signal has arrived, and what to do about it once something can stop.

    Threading model: :meth:`install`, :meth:`when_requested` and :meth:`uninstall` are called
    on the main thread, where Python also runs signal handlers. The handler only records the
    signal and sets an event; the action runs on a thread of its own (``sluice-stop``), never
    in the handler, which may have interrupted the main thread while it holds a lock the action
    needs.

    Lifecycle: :meth:`install` -> signals set the request -> :meth:`when_requested` (once the
    thing to stop exists) -> :meth:`uninstall`, which gives the signals their previous
    handlers back.
    """

    def __init__(self) -> None:
        self._requested = threading.Event()
        self._closed = False
        self._previous: dict[int, _Handler] = {}
        self.signal_number: int | None = None
        """The first stop signal received, if any."""

    @classmethod
    def install(cls, ignore: Iterable[int] = ()) -> StopRequest:
        """Take SIGTERM and SIGINT from now on (main thread only).

        ``ignore``: signals whose default action (ending the process) must not apply during the
        start-up either, such as SIGHUP before there is anything to reload; the caller installs
        its own handler for them later.
        """
        request = cls()
        for number in STOP_SIGNALS:
            request._previous[number] = signal.signal(number, request._on_signal)
        for ignored in ignore:
            request._previous[ignored] = signal.signal(ignored, signal.SIG_IGN)
        return request

    @property
    def requested(self) -> bool:
        """Whether a stop signal has arrived."""
        return self.signal_number is not None

    def when_requested(self, action: Callable[[], None]) -> None:
        """Run ``action`` on the ``sluice-stop`` thread when a stop signal arrives: at once if
        one has arrived already; never after :meth:`uninstall`."""

        def wait_then_act() -> None:
            self._requested.wait()
            if not self._closed:
                log.info("signal %s: sealing and stopping", self.signal_number)
                action()

        threading.Thread(target=wait_then_act, name="sluice-stop", daemon=True).start()

    def uninstall(self) -> None:
        """Give the signals their previous handlers back (main thread only)."""
        for number, handler in self._previous.items():
            signal.signal(number, handler)
        self._previous.clear()
        self._closed = True
        self._requested.set()  # lets the waiting thread end; our handler is gone by now

    def _on_signal(self, signum: int, _frame: FrameType | None) -> None:
        if self.signal_number is None:
            self.signal_number = signum
        self._requested.set()
