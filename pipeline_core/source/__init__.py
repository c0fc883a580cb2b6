"""Log file sources: file identity, discovery, rotation handling and time-sliced reading.

A :class:`FileWatcher` finds a pipeline's files and follows them through rename and copytruncate
rotation; a :class:`TimeSlicedReader` reads them round robin, a time slice per call, into
:class:`Chunk` values (whole lines as raw bytes, no per-line work).
"""

from pipeline_core.source._chunk import Chunk, count_lines
from pipeline_core.source._fingerprint import Signature, new_fingerprint, read_signature
from pipeline_core.source._reader import Publish, SliceResult, TimeSlicedReader, TurnResult
from pipeline_core.source._tracked_file import TrackedFile
from pipeline_core.source._watcher import FileWatcher

__all__ = [
    "Chunk",
    "FileWatcher",
    "Publish",
    "Signature",
    "SliceResult",
    "TimeSlicedReader",
    "TrackedFile",
    "TurnResult",
    "count_lines",
    "new_fingerprint",
    "read_signature",
]
