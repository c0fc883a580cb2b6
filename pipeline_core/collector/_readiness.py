"""What a running collector tells its probes: is it alive, is it ready.

Live: the process's loops run (the mailbox thread turns, the control and stage threads are
alive). Ready: live, and it holds every served pipeline's lease, and each pipeline's metastore
answered recently. Each answer is a :class:`ProbeResult`; the control loop's part of it is a
:class:`ControlStatus` it publishes after each turn.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Protocol

METASTORE_GRACE_SECONDS = 10.0
"""A pipeline whose last metastore query failed stays ready this long after the last query
that succeeded (one failed poll is a blip, ten seconds of them an outage)."""

MAILBOX_STALL_SECONDS = 60.0
"""The collector is not live when its mailbox thread has not handled the control loop's
sweep (sent every second at most, every 10 s at least) for this long: a stuck loop, not a
slow seal."""


@dataclass(frozen=True)
class ProbeResult:
    """A probe's answer: ``ok`` and a one-line ``reason`` (``"ok"`` when ok)."""

    ok: bool
    reason: str = "ok"

    def to_dict(self) -> dict[str, object]:
        return {"ok": self.ok, "reason": self.reason}


OK = ProbeResult(True)


class HealthProbes(Protocol):
    """What the ops endpoints ask (``/health``, ``/ready``): any thread, never blocks.

    ``liveness()`` is ok while the process's loops run (starting and stopping included);
    ``readiness()`` is ok while it collects with its leases held and its metastores reachable.
    """

    def liveness(self) -> ProbeResult: ...

    def readiness(self) -> ProbeResult: ...


@dataclass(frozen=True)
class LeaseStatus:
    """One watched pipeline as the control loop last saw it.

    ``lease_until``: the ``time.monotonic()`` instant its lease runs out unless renewed (taken
    or renewed + ``lease_seconds``); ``lost``: another collector took it over. ``reached_at``:
    the last metastore query for it that succeeded; ``error``: the last query's error, None
    when it succeeded.
    """

    pipeline: str
    host: str
    lease_until: float
    reached_at: float
    lost: bool = False
    error: str | None = None

    def renewed(self, at: float, lease_seconds: float) -> LeaseStatus:
        return replace(self, lease_until=at + lease_seconds, reached_at=at, error=None)

    def reached(self, at: float) -> LeaseStatus:
        return replace(self, reached_at=at, error=None)

    def failed(self, error: BaseException) -> LeaseStatus:
        return replace(self, error=_one_line(error))

    def taken_over(self) -> LeaseStatus:
        return replace(self, lost=True)

    def problem(self, now: float, grace: float) -> str | None:
        """Why this pipeline keeps the collector from being ready at ``now``, if it does."""
        name = f"{self.pipeline} on {self.host}"
        if self.lost:
            return f"lease of {name} lost: another collector took it over"
        unreachable = f"unreachable for {now - self.reached_at:.1f} s: {self.error}"
        if now >= self.lease_until:
            expired = f"lease of {name} expired {now - self.lease_until:.1f} s ago (not renewed)"
            if self.error is not None:  # the cause, not only its consequence
                return f"{expired}: metastore {unreachable}"
            return expired
        if self.error is not None and now - self.reached_at >= grace:
            return f"metastore of {name} {unreachable}"
        return None


@dataclass(frozen=True)
class ControlStatus:
    """What the control loop knows of leases and metastores: one :class:`LeaseStatus` per
    watched pipeline, and since when it has been waiting for a metastore's answer (None when
    it is not). Replaced whole by the control thread; read from any thread."""

    pipelines: tuple[LeaseStatus, ...] = ()
    waiting_since: float | None = None

    def readiness(self, now: float, grace: float = METASTORE_GRACE_SECONDS) -> ProbeResult:
        """Ok unless a lease is lost or expired, a pipeline's metastore queries have failed
        for ``grace`` seconds, or a query has hung that long."""
        for status in self.pipelines:
            problem = status.problem(now, grace)
            if problem is not None:
                return ProbeResult(False, problem)
        if self.waiting_since is not None and now - self.waiting_since >= grace:
            return ProbeResult(
                False, f"the metastore has not answered for {now - self.waiting_since:.1f} s"
            )
        return OK


def _one_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    first = text[0] if text else ""
    return f"{type(error).__name__}: {first}"[:300]
