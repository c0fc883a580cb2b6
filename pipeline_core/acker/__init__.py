"""End-to-end delivery tracking with Storm's XOR acker.

Every chunk read from a file is the root of a tree with a random 64-bit root id. Each stage that
passes the chunk on anchors new ids to it and acks the id it received, in one XOR::

    reader        init(tree, root)                  value = root
    send stage    ack(tree, root ^ c1 ^ ... ^ cG)   value = c1 ^ ... ^ cG  (an id per sink group)
    sink group i  ack(tree, ci) once delivered      value = 0 when every group is done

A value of 0 means the whole tree is done, whatever order the acks came in, with 20 bytes of
state per tree (the seed's point). A done tree advances its file's committed offset
(``OffsetTracker``: the lowest unacked offset, never past a gap); a failed or timed-out tree is
handed back to the collector, which replays its byte range from the file.
"""

from pipeline_core.acker._acker import (
    DEFAULT_TIMEOUT_SECONDS,
    Acker,
    AckerListener,
    TreeOutcome,
    TreeRecord,
    TreeSource,
    new_id,
)
from pipeline_core.acker._offsets import OffsetTracker

__all__ = [
    "DEFAULT_TIMEOUT_SECONDS",
    "Acker",
    "AckerListener",
    "OffsetTracker",
    "TreeOutcome",
    "TreeRecord",
    "TreeSource",
    "new_id",
]
