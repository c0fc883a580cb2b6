"""Which files a source's globs match now: discovery, shared by the watcher, the state page
and ``sluice validate``.

**Symlinks.** A glob's *fixed prefix* is its leading folders written without a pattern
(``/var/log/nginx`` for ``/var/log/nginx/access.log*``, ``/var/log`` for ``/var/log/*/app.log``):
the config's author chose them, and symlinks among them are followed. Below it, whoever can
write the folders may plant links, so a matched path that is a symlink, or that lies under a
symlinked folder below the prefix, is not read unless the source says ``follow_symlinks:
true``; then the file it resolves to must lie under the prefix or under one of the source's
``symlink_targets``. A path not read for this is logged once (:func:`find_files`) and listed by
``sluice validate`` (:func:`discover`). Only regular files are found (never a FIFO, a device or
a socket); the descriptor a file is opened with is checked again to be the file found here
(:meth:`TrackedFile.open`), so nothing swapped in after the scan is read.

``**`` walks each real folder once (by device and inode), however many symlinks lead to it, so
symlink loops cannot make a scan endless; without ``follow_symlinks`` it does not enter
symlinked folders at all.

Discovery is on the hot path of every scan: a matched path costs one ``lstat`` (as the
``stat`` it replaced did); a folder below the prefix one more per scan, however many files it
holds; only a symlink costs more (resolving it, when it is followed).
"""

from __future__ import annotations

import fnmatch
import functools
import glob
import logging
import os
import re
import stat
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from pipeline_core._file_names import shown_path
from pipeline_core.config import SourceConfig

log = logging.getLogger(__name__)

Inode = tuple[int, int]

SYMLINK = "a symlink"
"""Why a path is not read: it is a symlink and its source does not follow them."""
SYMLINKED_FOLDER = "a symlinked folder"
"""Why ``**`` did not look into a folder: it is a symlink and its source does not follow
them."""
_FOLLOW_HINT = "set follow_symlinks: true on the source to read through symlinks"
_WARNED_MAX = 10_000
"""How many paths not read are remembered as already logged (then forgotten, and logged
again)."""
_warned: set[tuple[str, str, str]] = set()
"""``(source, path, why)`` already logged: each is logged once, not at every scan."""


@dataclass(frozen=True)
class Discovery:
    """What a source's globs match now."""

    files: dict[Inode, tuple[str, int]]
    """``(dev, ino) -> (path, size)`` of the regular files to read."""
    refused: dict[str, str]
    """``path -> why`` of the paths matched but not read by the symlink policy (see
    :func:`explain_not_read`)."""


def find_files(source: SourceConfig) -> dict[Inode, tuple[str, int]]:
    """``(dev, ino) -> (path, size)`` of the regular files the source's paths match now, less
    its excludes and the paths its symlink policy refuses (each logged once, at WARNING); a
    file reached by several paths: the first in sorted order."""
    found = discover(source)
    for path, why in found.refused.items():
        key = (source.name, path, why)
        if key not in _warned:
            if len(_warned) >= _WARNED_MAX:
                _warned.clear()
            _warned.add(key)
            why = explain_not_read(path, why)
            log.warning("source %s: %s is not read: %s", source.name, shown_path(path), why)
    return found.files


def discover(source: SourceConfig) -> Discovery:
    """The files :func:`find_files` finds, and the paths it does not read, with why; nothing
    is logged."""
    files: dict[Inode, tuple[str, int]] = {}
    refused: dict[str, str] = {}
    for pattern in source.paths:
        policy = _SymlinkPolicy(pattern, source)
        skipped: list[str] = []  # the folders ``**`` did not enter
        matched = expand(pattern, follow_symlinks=source.follow_symlinks, skipped=skipped)
        for skipped_folder in skipped:
            refused.setdefault(skipped_folder, SYMLINKED_FOLDER)
        for path in sorted(matched):
            if excluded(source, path):
                continue
            try:
                info = os.lstat(path)
            except OSError:
                continue
            folder = policy.symlinked_folder(path)
            if stat.S_ISLNK(info.st_mode) or folder is not None:
                resolved, why = policy.resolve(path, folder)
                if why is not None:
                    refused.setdefault(path, why)
                if resolved is None:
                    continue
                info = resolved
            if stat.S_ISREG(info.st_mode):
                files.setdefault((info.st_dev, info.st_ino), (path, info.st_size))
    if refused:  # read all the same by another of the source's globs
        read = {path for path, _size in files.values()}
        refused = {path: why for path, why in refused.items() if path not in read}
    return Discovery(files, refused)


_Match = Callable[[str], object]


def excluded(source: SourceConfig, path: str) -> bool:
    """Whether the source's ``exclude`` names ``path``: a pattern without a separator matches
    the file's name, one with a separator the whole path (``fnmatch``)."""
    by_name, by_path = _exclusions(tuple(source.exclude))
    if by_path is not None and by_path(path):
        return True
    return by_name is not None and by_name(path.rpartition(os.sep)[2]) is not None


@functools.lru_cache(maxsize=256)
def _exclusions(patterns: tuple[str, ...]) -> tuple[_Match | None, _Match | None]:
    """The tests of :func:`excluded` for ``patterns``, compiled once: by name, by path."""
    return (
        _any_of([pattern for pattern in patterns if os.sep not in pattern]),
        _any_of([pattern for pattern in patterns if os.sep in pattern]),
    )


def _any_of(patterns: list[str]) -> _Match | None:
    """A test of whether a string matches any of ``patterns`` (``fnmatch``), or None."""
    if not patterns:
        return None
    either = "|".join(f"(?:{fnmatch.translate(os.path.normcase(p))})" for p in patterns)
    return re.compile(either).match


def explain_not_read(path: str, why: str) -> str:
    """``why`` a path is not read, for people (paths shown escaped: one printable line): a
    symlink not followed names its target."""
    if why not in (SYMLINK, SYMLINKED_FOLDER):
        return why
    try:
        target = shown_path(os.readlink(path))
    except OSError:
        target = "?"
    return f"{why} (to {target}); {_FOLLOW_HINT}"


def fixed_prefix(pattern: str) -> str:
    """The leading folders of ``pattern`` written without a pattern (never its last part):
    ``/var/log`` for ``/var/log/*/app.log``; ``.`` (the current folder) for a relative pattern
    whose first part is a pattern."""
    parts = pattern.split(os.sep)[:-1]
    fixed: list[str] = []
    for part in parts:
        if glob.has_magic(part):
            break
        fixed.append(part)
    return os.sep.join(fixed) or (os.sep if pattern.startswith(os.sep) else os.curdir)


class _SymlinkPolicy:
    """What one glob of a source may read through symlinks (one per glob and discovery)."""

    def __init__(self, pattern: str, source: SourceConfig) -> None:
        self._prefix = fixed_prefix(pattern)
        parts = pattern.split(os.sep)[:-1]
        self._depth = next((i for i, p in enumerate(parts) if glob.has_magic(p)), len(parts))
        """How many leading parts of a matched path are the fixed prefix's."""
        self._follow = source.follow_symlinks
        self._targets = source.symlink_targets
        self._roots: list[str] | None = None
        self._linked: dict[str, bool] = {}
        """Folders below the prefix looked at: whether each is a symlink."""
        self._by_parent: dict[str, str | None] = {}
        """The answer of :meth:`symlinked_folder` for the files of each folder."""

    def symlinked_folder(self, path: str) -> str | None:
        """The first folder of ``path`` below the fixed prefix that is a symlink, if any."""
        if path.count(os.sep) <= self._depth:
            return None  # in the prefix itself: no folder below it
        parent = path.rpartition(os.sep)[0]
        if parent not in self._by_parent:
            self._by_parent[parent] = self._first_link(parent)
        return self._by_parent[parent]

    def _first_link(self, parent: str) -> str | None:
        parts = parent.split(os.sep)
        for end in range(self._depth + 1, len(parts) + 1):
            folder = os.sep.join(parts[:end])
            linked = self._linked.get(folder)
            if linked is None:
                try:
                    linked = stat.S_ISLNK(os.lstat(folder).st_mode)
                except OSError:
                    linked = False  # gone: so is the path, which the open will find
                self._linked[folder] = linked
            if linked:
                return folder
        return None

    def resolve(self, path: str, folder: str | None) -> tuple[os.stat_result | None, str | None]:
        """For a path reached through a symlink (its last part, or ``folder``): the file it
        resolves to, if it may be read, and why not otherwise (None: passed over without a
        word, as a dangling or looping link, or one to something not a regular file, is)."""
        if not self._follow:
            if folder is None:
                return None, SYMLINK
            return None, f"under the symlinked folder {shown_path(folder)}; {_FOLLOW_HINT}"
        try:
            real = os.path.realpath(path)
            info = os.lstat(real)  # the file itself: no link left to swap at its name
        except (OSError, ValueError):
            return None, None
        if not stat.S_ISREG(info.st_mode):
            return None, None
        if not any(_inside(real, root) for root in self.roots()):
            if folder is None:
                via = "a symlink to"
            else:
                via = f"under the symlinked folder {shown_path(folder)}, resolving to"
            allowed = f"{shown_path(self.roots()[0])} (the glob's fixed prefix)"
            if self._targets:
                allowed += " and the source's symlink_targets"
            return None, f"{via} {shown_path(real)}, outside {allowed}"
        return info, None

    def roots(self) -> list[str]:
        """The folders a followed symlink may lead into, resolved: the fixed prefix, then the
        source's ``symlink_targets``."""
        if self._roots is None:
            self._roots = [os.path.realpath(p) for p in [self._prefix, *self._targets]]
        return self._roots


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def siblings(path: str) -> Iterator[tuple[str, os.stat_result]]:
    """The regular files in the folder of ``path`` (where a file was last seen); symlinks are
    not looked through."""
    try:
        entries = list(os.scandir(os.path.dirname(path) or "."))
    except OSError:
        return
    for entry in entries:
        try:
            if entry.is_file(follow_symlinks=False):
                yield entry.path, entry.stat(follow_symlinks=False)
        except OSError:
            continue


def expand(
    pattern: str, *, follow_symlinks: bool = True, skipped: list[str] | None = None
) -> list[str]:
    """The paths matching ``pattern`` (``glob`` syntax, ``**`` for any folders below).

    Unlike ``glob.glob(pattern, recursive=True)``, ``**`` walks each real folder once (by
    device and inode), however many symlinks lead to it: a folder linking to itself or to a
    parent would otherwise be walked again down every link until the path is too long, which
    with two such links is exponential. Without ``follow_symlinks``, ``**`` enters no
    symlinked folder (each is appended to ``skipped``, when given)."""
    parts = pattern.split(os.sep)
    if "**" not in parts:
        return glob.glob(pattern)
    at = parts.index("**")
    head = os.sep.join(parts[:at]) or (os.sep if pattern.startswith(os.sep) else "")
    rest = parts[at + 1 :] or ["*"]
    bases = glob.glob(head) if glob.has_magic(head) else [head]  # "": the current folder
    found: list[str] = []
    for base in bases:
        for folder in folders_below(base, follow_symlinks=follow_symlinks, skipped=skipped):
            below = os.path.join(glob.escape(folder), *rest)
            found.extend(expand(below, follow_symlinks=follow_symlinks, skipped=skipped))
    return found


def folders_below(
    base: str, *, follow_symlinks: bool = True, skipped: list[str] | None = None
) -> Iterator[str]:
    """``base`` and every folder below it, each real folder once, breadth first; hidden
    folders are skipped, as ``glob``'s ``**`` does; without ``follow_symlinks``, so are
    symlinked folders below ``base`` (appended to ``skipped``, when given)."""
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
                visible = [entry for entry in entries if not entry.name.startswith(".")]
        except OSError:
            continue
        names = sorted(entry.name for entry in visible if _is_folder(entry, follow_symlinks))
        queue.extend(os.path.join(folder, name) for name in names)
        if skipped is not None and not follow_symlinks:
            skipped.extend(sorted(entry.path for entry in visible if _is_linked_folder(entry)))


def _is_linked_folder(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_symlink() and entry.is_dir(follow_symlinks=True)
    except OSError:
        return False


def _is_folder(entry: os.DirEntry[str], follow_symlinks: bool) -> bool:
    try:
        return entry.is_dir(follow_symlinks=follow_symlinks)
    except OSError:
        return False
