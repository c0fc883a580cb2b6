"""Acting at the production code's named fault points (:class:`FaultPoint`): raising there, as
a failing disk or a dying thread would, or doing what another writer would do at that moment.

Only one handler is installed at a time: these hooks are for one test at a time, and remove
theirs when their block ends.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from pipeline_core._fault_points import FaultPoint, install


@contextmanager
def at_fault_point(point: FaultPoint, action: Callable[[int], None]) -> Iterator[None]:
    """Until the block ends, call ``action(n)`` when the production code reaches ``point`` for
    the ``n``-th time (from 1), on the thread that reached it; what ``action`` raises is raised
    there."""
    reached = 0
    lock = threading.Lock()

    def handler(at: FaultPoint) -> None:
        nonlocal reached
        if at is not point:
            return
        with lock:
            reached += 1
            number = reached
        action(number)

    install(handler)
    try:
        yield
    finally:
        install(None)


@contextmanager
def raising_at(point: FaultPoint, error: BaseException, *, nth: int = 1) -> Iterator[None]:
    """Until the block ends, raise ``error`` the ``nth`` time the production code reaches
    ``point`` (only then)."""

    def fail(number: int) -> None:
        if number == nth:
            raise error

    with at_fault_point(point, fail):
        yield
