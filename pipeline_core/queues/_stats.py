"""Decisions and snapshots shared by the queues: ``PushResult``, ``Placement``, ``QueueStats``."""

from __future__ import annotations

import enum
from dataclasses import dataclass

__all__ = ["Placement", "PushResult", "QueueStats"]


class PushResult(enum.Enum):
    """What a queue did with a pushed item."""

    ACCEPTED = "accepted"
    """The item is in the queue."""
    FULL = "full"
    """The queue is not writable (see ``WatermarkQueue``); the item was not added."""


class Placement(enum.Enum):
    """Where ``BlockedQueue.submit`` put an item."""

    DELIVERED = "delivered"
    """Pushed into the target level."""
    PARKED = "parked"
    """Parked in the blocked queue until the target queue's feedback."""


@dataclass(frozen=True, slots=True)
class QueueStats:
    """A point-in-time snapshot of one watermark queue; counters count since creation.

    Attributes:
        size: items in the queue now (may exceed ``high`` after urgent pushes).
        high: the high watermark: at this size non-urgent pushes start to be refused.
        low: the low watermark: draining to this size makes the queue writable again.
        writable: whether a non-urgent push would be accepted now.
        pushes: accepted pushes, urgent ones included.
        urgent_pushes: accepted pushes made with ``urgent=True``.
        refusals: pushes answered ``PushResult.FULL``.
        pops: items taken out.
        feedbacks: high-to-low crossings, i.e. times the upstream was told "writable again".
    """

    size: int
    high: int
    low: int
    writable: bool
    pushes: int
    urgent_pushes: int
    refusals: int
    pops: int
    feedbacks: int
