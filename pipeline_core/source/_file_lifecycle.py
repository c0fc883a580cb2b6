"""The tracked file's lifecycle as data: its states, and which moves between them are legal.

::

    LIVE ──► ROTATED ──► DONE          (renamed or deleted, read to its end)
    LIVE ──► DETACHED ──► COPIED ──► KEPT ──► DONE
                     └──► ROTATED      (copytruncate's copy, at a path or off them)

A file's state changes only through ``TrackedFile.move_to`` (and ``mark_rotated``), which
checks the move against :data:`FILE_TRANSITIONS`. DONE is final: a DONE file is never read
again, and its record keeps its inode from being read as a new file until it is forgotten.

KEPT is a COPIED file read to its end: it is no longer read, but it stays open and claimed at its
path, so its inode cannot be handed to another file (the next copy) that would then look like it.
The metastore stores it as COPIED (:attr:`FileState.persisted`): a restarted collector reads a
copy on from its sealed offset, which may lie before the end that was read, and finds it KEPT
again once nothing is left.
"""

from __future__ import annotations

from collections.abc import Mapping

from pipeline_core._compat import StrEnum
from pipeline_core.errors import SluiceError


class FileState(StrEnum):
    """Where a tracked file stands."""

    LIVE = "live"
    """Found at one of the source's paths."""
    ROTATED = "rotated"
    """Renamed away from the paths or deleted; read to its end from the open descriptor."""
    DETACHED = "detached"
    """Its inode was truncated or reused (copytruncate); waiting for the copy to turn up."""
    COPIED = "copied"
    """The copy copytruncate made of a file, found at a source path: never written again, so
    read to its end (an unterminated last line included)."""
    KEPT = "kept"
    """A COPIED file read to its end: no longer read, kept open and claimed at its path, so it
    is never read as a new file. Stored as COPIED."""
    DONE = "done"
    """Read to its end after rotation, or gone; kept so it is never read again."""

    @property
    def persisted(self) -> FileState:
        """The state the metastore stores for a file in this one (KEPT is stored as COPIED)."""
        return FileState.COPIED if self is FileState.KEPT else self

    @property
    def read(self) -> bool:
        """Whether the reader reads a file in this state (when it is open)."""
        return self in (FileState.LIVE, FileState.ROTATED, FileState.COPIED)

    @property
    def claims_inode(self) -> bool:
        """Whether the file's inode is its own: another file found there is not new."""
        return self in (FileState.LIVE, FileState.ROTATED, FileState.COPIED, FileState.KEPT)

    def can_become(self, target: FileState) -> bool:
        """True when the lifecycle allows the move from this state to ``target``."""
        return target in FILE_TRANSITIONS[self]

    def check_transition(self, fingerprint: str, target: FileState) -> None:
        """Do nothing when file ``fingerprint``, in this state, may become ``target``.

        Raises:
            IllegalFileTransitionError: the lifecycle does not allow that move.
        """
        if not self.can_become(target):
            raise IllegalFileTransitionError(fingerprint, self, target)


FILE_TRANSITIONS: Mapping[FileState, frozenset[FileState]] = {
    FileState.LIVE: frozenset(
        {FileState.LIVE, FileState.ROTATED, FileState.DETACHED, FileState.DONE}
    ),
    FileState.ROTATED: frozenset(
        {FileState.ROTATED, FileState.LIVE, FileState.DETACHED, FileState.DONE}
    ),
    FileState.DETACHED: frozenset({FileState.COPIED, FileState.ROTATED, FileState.DONE}),
    FileState.COPIED: frozenset(
        {FileState.COPIED, FileState.KEPT, FileState.ROTATED, FileState.DONE}
    ),
    FileState.KEPT: frozenset({FileState.ROTATED, FileState.DONE}),
    FileState.DONE: frozenset(),
}
"""The states each state may move to.

* LIVE -> LIVE, ROTATED -> ROTATED and COPIED -> COPIED: looked at again and found as it was
  (a ROTATED file renamed again is read on from its descriptor).
* LIVE or ROTATED -> DETACHED: truncated or replaced (copytruncate); the copy is looked for.
* ROTATED -> LIVE: a rotated file found at one of the paths again.
* DETACHED -> COPIED (the copy is at a path) or ROTATED (it lies off them), or DONE (no copy
  turned up in time).
* COPIED -> KEPT: read to its end (after a restart, where the file is restored COPIED, once it
  is opened again and nothing is left after its sealed offset).
* COPIED or KEPT -> ROTATED: renamed off the paths or deleted while open: what is left is read
  through the descriptor.
* Any but DONE -> DONE: read to its end after a rotation, gone, or its inode found holding
  another file. DONE is final.
"""


class IllegalFileTransitionError(SluiceError, RuntimeError):
    """A tracked file was asked to move to a state its lifecycle does not allow from the one
    it is in (:data:`FILE_TRANSITIONS`): a defect of the watcher or the reader, never of the
    files read. The message names the file's fingerprint, its state and the one asked for."""

    def __init__(self, fingerprint: str, state: FileState, target: FileState) -> None:
        self.fingerprint = fingerprint
        self.state = state
        self.target = target
        sources = " or ".join(s.value for s in FileState if s.can_become(target))
        super().__init__(
            f"file {fingerprint or '(a probe)'} is {state.value}; only {sources or 'no'} "
            f"files can become {target.value}"
        )
