"""What one ``process()`` call of a sink or sink processor achieved (Flume's ``Sink.Status``)."""

from __future__ import annotations

from enum import Enum


class Status(Enum):
    READY = "ready"
    """A batch was delivered; poll again at once."""
    BACKOFF = "backoff"
    """Nothing was delivered (nothing to do, or the sink is not ready): back off before polling
    again. A failure is not a status: it raises."""
