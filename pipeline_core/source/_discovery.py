"""Which files a source's globs match now: discovery, shared by the watcher and the state page.

``**`` walks each real folder once (by device and inode), however many symlinks lead to it, so
symlink loops cannot make a scan endless.
"""

from __future__ import annotations

import fnmatch
import glob
import os
import stat
from collections import deque
from collections.abc import Iterator

from pipeline_core.config import SourceConfig

Inode = tuple[int, int]


def find_files(source: SourceConfig) -> dict[Inode, tuple[str, int]]:
    """``(dev, ino) -> (path, size)`` of the regular files the source's paths match now, less
    its excludes (a file reached by several paths: the first in sorted order)."""
    found: dict[Inode, tuple[str, int]] = {}
    for pattern in source.paths:
        for path in sorted(expand(pattern)):
            if any(fnmatch.fnmatch(path, ex) for ex in source.exclude):
                continue
            try:
                info = os.stat(path)
            except OSError:
                continue
            if stat.S_ISREG(info.st_mode):
                found.setdefault((info.st_dev, info.st_ino), (path, info.st_size))
    return found


def siblings(path: str) -> Iterator[tuple[str, os.stat_result]]:
    """The regular files in the folder of ``path`` (where a file was last seen)."""
    try:
        entries = list(os.scandir(os.path.dirname(path) or "."))
    except OSError:
        return
    for entry in entries:
        try:
            if entry.is_file():
                yield entry.path, entry.stat()
        except OSError:
            continue


def expand(pattern: str) -> list[str]:
    """The paths matching ``pattern`` (``glob`` syntax, ``**`` for any folders below).

    Unlike ``glob.glob(pattern, recursive=True)``, ``**`` walks each real folder once (by
    device and inode), however many symlinks lead to it: a folder linking to itself or to a
    parent would otherwise be walked again down every link until the path is too long, which
    with two such links is exponential."""
    parts = pattern.split(os.sep)
    if "**" not in parts:
        return glob.glob(pattern)
    at = parts.index("**")
    head = os.sep.join(parts[:at]) or (os.sep if pattern.startswith(os.sep) else "")
    rest = parts[at + 1 :] or ["*"]
    bases = glob.glob(head) if glob.has_magic(head) else [head]  # "": the current folder
    found: list[str] = []
    for base in bases:
        for folder in folders_below(base):
            found.extend(expand(os.path.join(glob.escape(folder), *rest)))
    return found


def folders_below(base: str) -> Iterator[str]:
    """``base`` and every folder below it, each real folder once, breadth first; hidden
    folders are skipped, as ``glob``'s ``**`` does."""
    seen: set[Inode] = set()
    queue = deque([base])
    while queue:
        folder = queue.popleft()
        try:
            info = os.stat(folder or os.curdir)
        except OSError:
            continue
        if not stat.S_ISDIR(info.st_mode) or (info.st_dev, info.st_ino) in seen:
            continue
        seen.add((info.st_dev, info.st_ino))
        yield folder
        try:
            with os.scandir(folder or os.curdir) as entries:
                names = sorted(e.name for e in entries if not e.name.startswith("."))
        except OSError:
            continue
        queue.extend(os.path.join(folder, name) for name in names)
