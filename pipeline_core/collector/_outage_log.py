"""What the control loop says of a metastore it cannot reach: the outage when it begins, a
reminder while it lasts, and its end. Its loop retries every second or so; a warning per try
would bury the one line an operator needs."""

from __future__ import annotations

import logging

OUTAGE_REMINDER_SECONDS = 30.0
"""While an outage lasts, it is said again this often."""


class OutageLog:
    """One outage per key (a pipeline): :meth:`failed` at each failed try, :meth:`reached` at
    each success. The first failure is a warning, the next ones are debug lines but for a
    warning every ``reminder_seconds``; the first success after them is an info line with the
    outage's length.

    Threading model: one thread (the control thread) calls it.
    """

    def __init__(
        self, logger: logging.Logger, reminder_seconds: float = OUTAGE_REMINDER_SECONDS
    ) -> None:
        self._log = logger
        self._reminder_seconds = reminder_seconds
        self._since: dict[str, float] = {}
        self._said: dict[str, float] = {}

    def failed(self, key: str, error: BaseException, now: float) -> None:
        since = self._since.setdefault(key, now)
        if since == now:
            self._log.warning("%s: the metastore cannot be reached (retrying): %s", key, error)
        elif now - self._said.get(key, since) >= self._reminder_seconds:
            self._log.warning(
                "%s: the metastore cannot be reached for %.0f s (retrying): %s",
                key,
                now - since,
                error,
            )
        else:
            self._log.debug("%s: the metastore cannot be reached: %s", key, error)
            return
        self._said[key] = now

    def reached(self, key: str, now: float) -> None:
        since = self._since.pop(key, None)
        self._said.pop(key, None)
        if since is not None:
            self._log.info("%s: the metastore is reachable again after %.1f s", key, now - since)
