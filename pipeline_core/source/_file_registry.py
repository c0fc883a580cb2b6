"""The files a watcher tracks, in the order they were first seen, and found by first bytes.

A new file is compared with the tracked files that may be the original it is a copy of: those
whose first bytes it shares. A scan finding ten thousand new files must not compare each with
all the others, so the tracked files are indexed by their first :data:`KEY_BYTES` bytes. The
index is made at the first look-up and kept from scan to scan (a container's new folder must
not cost an index of every file): a file's first bytes never change once known (a file that
no longer starts with them is another file, tracked anew), so only the files indexed before
they were known move, when they are, and files forgotten make it again.
"""

from __future__ import annotations

from pipeline_core.source._tracked_file import TrackedFile

KEY_BYTES = 16
"""How many first bytes index the tracked files for a new file's look-up."""


class FileRegistry:
    """Every file a watcher tracks; every file it starts tracking goes through :meth:`add`.

    Threading model: owned by the :class:`FileWatcher` (shared with its helpers), on the
    collector's mailbox thread; not thread-safe.
    """

    def __init__(self, files: list[TrackedFile]) -> None:
        self.files = files
        """Every tracked file, in the order they were first seen (not to be changed but by
        :meth:`add` and :meth:`forget`)."""
        self._heads: dict[bytes | None, list[TrackedFile]] | None = None
        """The tracked files by their first bytes, once looked up (:meth:`_index`)."""

    def add(self, tracked: TrackedFile) -> None:
        """Track ``tracked`` from now on."""
        self.files.append(tracked)
        self._index_head(tracked)

    def forget(self, forgotten: list[TrackedFile]) -> None:
        """Stop tracking the files of ``forgotten``."""
        gone = {id(tracked) for tracked in forgotten}
        self.files = [f for f in self.files if id(f) not in gone]
        self._heads = None

    def near(self, head: bytes) -> list[TrackedFile]:
        """The tracked files whose first bytes may be ``head``'s (a new file's first bytes):
        those that share its first :data:`KEY_BYTES` bytes and those of which fewer are
        known; every file when ``head`` is shorter than that."""
        if len(head) < KEY_BYTES:
            return self.files
        heads = self._index()
        short = heads.get(None)
        if short and any(len(tracked.head) >= KEY_BYTES for tracked in short):
            del heads[None]  # first bytes learnt since: indexed by them now
            for tracked in short:
                self._index_head(tracked)
        return [*heads.get(head[:KEY_BYTES], ()), *heads.get(None, ())]

    def _index(self) -> dict[bytes | None, list[TrackedFile]]:
        """The tracked files by their first :data:`KEY_BYTES` bytes (None: fewer known)."""
        if self._heads is None:
            self._heads = {}
            for tracked in self.files:
                self._index_head(tracked)
        return self._heads

    def _index_head(self, tracked: TrackedFile) -> None:
        if self._heads is not None:
            key = tracked.head[:KEY_BYTES] if len(tracked.head) >= KEY_BYTES else None
            self._heads.setdefault(key, []).append(tracked)
