"""Named points on the paths that must survive a crash (sealing a batch, recording it,
uploading it) or a failure (writing a file), where a test may make the process fail.

Production code calls :func:`reached` at each; it does nothing unless a test has installed a
handler (:func:`install`), which may kill the process there (``tests/support/crash_points.py``)
or raise (:func:`pipeline_core.testing.raising_at`): the tests name the step they fail at,
instead of replacing the methods around it.

Threading model: :func:`install` before the collector starts; :func:`reached` from any thread
(the handler is called on the thread that reached the point).
"""

from __future__ import annotations

from collections.abc import Callable

from pipeline_core._compat import StrEnum


class FaultPoint(StrEnum):
    """The steps, in the order a seal (then, with an object store, an upload) takes them; then
    the steps of other writes."""

    PARTS_WRITTEN = "parts-written"
    """The handoff writer fsynced every part; no manifest yet."""
    MANIFEST_WRITTEN = "manifest-written"
    """The manifest is fsynced in ``_inflight``; the folder is not renamed yet."""
    BATCH_IN_PLACE = "batch-in-place"
    """The batch folder is renamed into place and its parent fsynced; not recorded yet."""
    SEAL_RECORD_SAVING = "seal-record-saving"
    """A batch sealed into the spool: its seal record is about to be written."""
    PART_UPLOADING = "part-uploading"
    """A part is about to be stored in the object store."""
    PART_UPLOADED = "part-uploaded"
    """A part is stored (and checked)."""
    STRAYS_DELETED = "strays-deleted"
    """Every part is stored and the objects of an earlier attempt deleted; no manifest yet."""
    SEAL_TRANSACTION_BEGINS = "seal-transaction-begins"
    """The metastore transaction that records the batch is about to open."""
    SEAL_TRANSACTION_OPEN = "seal-transaction-open"
    """Inside that transaction: the batch and its ranges inserted, nothing committed."""
    SEAL_TRANSACTION_COMMITTED = "seal-transaction-committed"
    """The transaction committed; the collector has not acted on it yet."""
    FILE_SINK_WRITING = "file-sink-writing"
    """The rolling file sink is about to write (part of) a batch to its current file."""


_handler: Callable[[FaultPoint], None] | None = None


def reached(point: FaultPoint) -> None:
    """The caller is at ``point``: the installed handler, if any, is called."""
    if _handler is not None:
        _handler(point)


def install(handler: Callable[[FaultPoint], None] | None) -> None:
    """Call ``handler`` at every point reached from now on (None: no more)."""
    global _handler
    _handler = handler
