"""A scan limited to the folders file events name, where the sources' globs allow it.

A scan that file events ask for may keep to the folders they name: each source's globs are
matched in those folders alone, and only the files tracked there (and any found there that a
file tracked elsewhere claims) are looked at. That holds only where a source's globs can be
matched folder by folder: not with ``**``, a pattern in more than the last folder's name, a
source that follows symlinks, or a folder that is a symlink (the source's own glob decides
what a symlink is); then the scan is a whole one.
"""

from __future__ import annotations

import fnmatch
import functools
import glob
import os
from collections.abc import Iterable
from dataclasses import dataclass

from pipeline_core.config import SourceConfig
from pipeline_core.source._discovery import Inode, find_files
from pipeline_core.source._tracked_file import TrackedFile


@dataclass(frozen=True)
class ScanScope:
    """The folders a limited scan looks in, and the sources narrowed to them.

    Threading model: immutable; made and used by a scan on the collector's mailbox thread.
    """

    folders: set[str]
    """The folders named (normalised)."""
    sources: dict[str, SourceConfig]
    """By name, each source globbing those folders alone (a source none of whose globs match
    there is left out)."""

    def holds(self, tracked: TrackedFile) -> bool:
        """Whether ``tracked`` is in one of the folders."""
        return folder_of(tracked) in self.folders

    def find_files(self, source: SourceConfig) -> dict[Inode, tuple[str, int]]:
        """What ``source``'s globs match in the folders (:func:`find_files`)."""
        narrowed = self.sources.get(source.name)
        return {} if narrowed is None else find_files(narrowed)


def limited_scope(sources: Iterable[SourceConfig], within: Iterable[str]) -> ScanScope | None:
    """The scope of a scan within the folders ``within``; None when some source cannot be
    matched folder by folder (the scan is then a whole one)."""
    folders = {os.path.normpath(folder) for folder in within}
    narrowed: dict[str, SourceConfig] = {}
    for source in sources:
        if source.follow_symlinks:
            return None
        paths: list[str] = []
        for pattern in source.paths:
            folder, name = os.path.split(pattern)
            shape = _folder_shape(folder)
            if shape is None:
                return None
            fixed, last = shape
            for changed in folders:
                if not _in_folder_shape(changed, fixed, last):
                    continue
                if os.path.islink(changed):
                    return None  # the source's own glob decides what a symlink is
                paths.append(os.path.join(glob.escape(changed), name))
        if paths:
            narrowed[source.name] = source.model_copy(update={"paths": paths})
    return ScanScope(folders, narrowed)


def folder_of(tracked: TrackedFile) -> str:
    """The folder ``tracked``'s path is in (normalised)."""
    return _folder_of_path(tracked.path)


@functools.lru_cache(maxsize=1 << 16)
def _folder_of_path(path: str) -> str:
    """:func:`folder_of` by path: a limited scan asks it of every tracked file (ten thousand
    on a host of containers), mostly of the same paths as the scan before."""
    return os.path.dirname(os.path.normpath(path)) or os.curdir


def _folder_shape(folder: str) -> tuple[str, str | None] | None:
    """A glob's folder as its fixed part and the pattern of its last folder's name (None: no
    pattern at all); None when another part of it is a pattern, or it has ``**``."""
    parts = folder.split(os.sep)
    magic = [index for index, part in enumerate(parts) if glob.has_magic(part)]
    if not magic:
        return os.path.normpath(folder or os.curdir), None
    if magic != [len(parts) - 1] or parts[-1] == "**":
        return None
    return os.path.normpath(os.sep.join(parts[:-1]) or os.curdir), parts[-1]


def _in_folder_shape(folder: str, fixed: str, last: str | None) -> bool:
    """Whether ``folder`` (normalised) is one a glob of that shape matches, as ``glob`` would
    (a hidden folder only by a pattern that starts with a dot)."""
    if last is None:
        return folder == fixed
    parent, name = os.path.split(folder)
    if (parent or os.curdir) != fixed or not fnmatch.fnmatchcase(name, last):
        return False
    return not name.startswith(".") or last.startswith(".")
