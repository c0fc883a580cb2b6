"""Log file sources: file identity, discovery, rotation handling and time-sliced reading.

A :class:`FileWatcher` finds a pipeline's files and follows them through rename and copytruncate
rotation; a :class:`TimeSlicedReader` reads them round robin, a time slice per call, into
:class:`Chunk` values (whole lines as raw bytes, no per-line work). :class:`FileEvents`
(:func:`open_file_events`: inotify on Linux) tell a caught-up reader which pipelines' files
changed, in the folders :func:`watch_targets` names.
"""

from pipeline_core.source._chunk import Chunk, LongLine, count_lines
from pipeline_core.source._chunk_reading import read_chunk
from pipeline_core.source._container_entries import (
    ContainerEvent,
    ContainerLogFormat,
    container_event,
)
from pipeline_core.source._discovery import (
    Discovery,
    discover,
    excluded,
    explain_not_read,
    find_files,
)
from pipeline_core.source._file_events import (
    FileChange,
    FileChanges,
    FileEvents,
    PollingFileEvents,
    open_file_events,
)
from pipeline_core.source._file_lifecycle import (
    FILE_TRANSITIONS,
    FileState,
    IllegalFileTransitionError,
)
from pipeline_core.source._file_record import FileRecord
from pipeline_core.source._fingerprint import (
    Signature,
    new_fingerprint,
    read_signature,
    signature_matches,
)
from pipeline_core.source._inotify import InotifyFileEvents
from pipeline_core.source._long_line import LONG_LINE_PREFIX_BYTES, read_long_line
from pipeline_core.source._multiline import EventFraming, Framing, MultilineRule, frame
from pipeline_core.source._reader import Publish, SliceResult, TimeSlicedReader, TurnResult
from pipeline_core.source._tracked_file import TrackedFile, open_regular
from pipeline_core.source._watch_targets import WatchTarget, merge_targets, watch_targets
from pipeline_core.source._watcher import FileWatcher

__all__ = [
    "FILE_TRANSITIONS",
    "LONG_LINE_PREFIX_BYTES",
    "Chunk",
    "ContainerEvent",
    "ContainerLogFormat",
    "Discovery",
    "EventFraming",
    "FileChange",
    "FileChanges",
    "FileEvents",
    "FileRecord",
    "FileState",
    "FileWatcher",
    "Framing",
    "IllegalFileTransitionError",
    "InotifyFileEvents",
    "LongLine",
    "MultilineRule",
    "PollingFileEvents",
    "Publish",
    "Signature",
    "SliceResult",
    "TimeSlicedReader",
    "TrackedFile",
    "TurnResult",
    "WatchTarget",
    "container_event",
    "count_lines",
    "discover",
    "excluded",
    "explain_not_read",
    "find_files",
    "frame",
    "merge_targets",
    "new_fingerprint",
    "open_file_events",
    "open_regular",
    "read_chunk",
    "read_long_line",
    "read_signature",
    "signature_matches",
    "watch_targets",
]
