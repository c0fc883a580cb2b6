"""The files a watcher tracks, in the order they were first seen, and found by first bytes.

A new file is compared with the tracked files that may be the original it is a copy of: those
whose first bytes it shares. A scan finding ten thousand new files must not compare each with
all the others, so the tracked files are indexed by their first :data:`KEY_BYTES` bytes,
made at a scan's first look-up and kept up to date until the scan ends.
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
        """While a scan runs: the tracked files by their first bytes (:meth:`_index`)."""

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
        return [*heads.get(head[:KEY_BYTES], ()), *heads.get(None, ())]

    def end_scan(self) -> None:
        """A scan ended: the index is made again at the next one's first look-up."""
        self._heads = None

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
