"""Where a pipeline's files can change: the folders its source patterns match in.

A pattern's files are found in the folder its pattern names (``/var/log/nginx`` for
``/var/log/nginx/access.log*``); under ``**`` in every folder the watcher would walk; with a
pattern in a folder's name (``/var/log/*/app.log``) in every folder that name matches now,
and in the last folder named without a pattern, where new matching folders appear. Folders
that do not exist yet are left out: the periodic discovery scan finds what appears there,
and the next :func:`watch_targets` includes them. Under ``**`` symlinked folders are not
entered (a link to ``/`` planted in a log folder would otherwise have every folder of the
host walked and watched): files a source reads through them (``follow_symlinks``) are found
by the periodic scan, and their own folders watched once they are read.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Iterable
from dataclasses import dataclass
from fnmatch import fnmatchcase

from pipeline_core.source._discovery import folders_below

__all__ = ["WatchTarget", "merge_targets", "watch_targets"]


@dataclass(frozen=True, slots=True)
class WatchTarget:
    """One folder whose entries may concern a pipeline, and which of them do."""

    folder: str
    """The folder, spelt as the pattern spells it (so that ``folder/name`` is the path the
    watcher's glob gives)."""
    names: tuple[str, ...]
    """``fnmatch`` patterns of the entry names that concern the pipeline; an event on any
    other name is ignored."""
    subfolders: bool = False
    """Whether folders appearing, moving or going in it concern the pipeline (they may hold
    matching files: ``**`` and patterns in a folder's name)."""

    def concerns(self, name: str) -> bool:
        """Whether an entry named ``name`` (not a folder) is one of the pipeline's."""
        return any(fnmatchcase(name, pattern) for pattern in self.names)


def watch_targets(patterns: Iterable[str]) -> list[WatchTarget]:
    """The folders to watch for files matching any of ``patterns`` (``glob`` syntax, ``**``
    for any folders below), one target per folder, sorted by folder."""
    targets: list[WatchTarget] = []
    for pattern in patterns:
        targets.extend(_targets_of(pattern))
    return merge_targets(targets)


def merge_targets(targets: Iterable[WatchTarget]) -> list[WatchTarget]:
    """One target per folder: the names of every target of that folder, and ``subfolders``
    if any of them has it; sorted by folder."""
    merged: dict[str, tuple[list[str], bool]] = {}
    for target in targets:
        names, subfolders = merged.setdefault(target.folder, ([], False))
        names.extend(name for name in target.names if name not in names)
        merged[target.folder] = (names, subfolders or target.subfolders)
    return [
        WatchTarget(folder, tuple(names), subfolders)
        for folder, (names, subfolders) in sorted(merged.items())
    ]


def _targets_of(pattern: str) -> list[WatchTarget]:
    folder, name = os.path.split(pattern)
    parts = pattern.split(os.sep)
    if "**" in parts:
        at = parts.index("**")
        head = os.sep.join(parts[:at]) or (os.sep if pattern.startswith(os.sep) else "")
        last = parts[-1] if at < len(parts) - 1 else "*"
        bases = glob.glob(head) if glob.has_magic(head) else [head]
        return [
            WatchTarget(_spelt(below), (last,), subfolders=True)
            for base in bases
            for below in folders_below(base, follow_symlinks=False)
        ]
    if not glob.has_magic(folder):
        return [WatchTarget(_spelt(folder), (name,))]
    targets = [
        WatchTarget(_spelt(found), (name,)) for found in glob.glob(folder) if os.path.isdir(found)
    ]
    root = _fixed_prefix(folder)
    targets.append(WatchTarget(_spelt(root), (), subfolders=True))
    return targets


def _fixed_prefix(folder: str) -> str:
    """The leading folders of ``folder`` written without a pattern."""
    fixed: list[str] = []
    for part in folder.split(os.sep):
        if glob.has_magic(part):
            break
        fixed.append(part)
    return os.sep.join(fixed) or (os.sep if folder.startswith(os.sep) else "")


def _spelt(folder: str) -> str:
    """``folder`` as a path to open ("" is the current folder)."""
    return folder or os.curdir
