"""The modes of what Sluice creates under ``data_dir``, staging and the spool: files 0600 in
folders 0700, whatever the process's umask (:data:`PRIVATE`); staging may be opened to the
collector's group instead (:data:`GROUP`, ``handoff.staging_access: group``), for a landing
that runs as another user of that group.

A sealed part holds the lines of logs that may be readable by few (0640 and less): no copy of
them, nor the manifests, seal records, metrics and metastore around them, is readable by
another user of the machine. The modes are given when a file or folder is created and set again
right after (a umask can only take bits away, but an unusual one may take the owner's); what
exists already is left as it is (a ``data_dir`` or staging folder an operator made). The Spark
landing reads and removes staged batches: run it as the collector's user (docs/deployment.md,
"Permissions").
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

PRIVATE_FILE_MODE = 0o600
PRIVATE_DIR_MODE = 0o700


@dataclass(frozen=True)
class FileModes:
    """The modes of the files and folders one part of Sluice creates."""

    file: int
    folder: int


PRIVATE = FileModes(PRIVATE_FILE_MODE, PRIVATE_DIR_MODE)
"""The owner alone (the default of everything)."""
GROUP = FileModes(0o640, 0o2750)
"""The owner writes, its group reads; folders setgid, so what is made in them keeps their
group."""


def make_private_dirs(path: Path, modes: FileModes = PRIVATE) -> None:
    """Create folder ``path`` and its missing parents, each ``modes.folder`` (``mkdir -p -m
    0700`` for every level, which ``Path.mkdir`` does not do for the parents); folders that
    exist are left as they are.

    Raises:
        OSError: a folder cannot be created (``FileExistsError``: ``path`` or a parent is a
            file).
    """
    missing: list[Path] = []
    folder = Path(path)
    while not folder.is_dir():
        missing.append(folder)
        if folder.parent == folder:
            break
        folder = folder.parent
    for folder in reversed(missing):
        try:
            os.mkdir(folder, modes.folder & 0o777)
        except FileExistsError:  # made meanwhile (another thread or process): theirs
            if not folder.is_dir():
                raise
            continue
        os.chmod(folder, modes.folder)


def open_private(path: Path, flags: int, modes: FileModes = PRIVATE) -> int:
    """``os.open(path, flags | O_CREAT)`` of a file that is (or is made) ``modes.file``
    (0600); returns the descriptor."""
    fd = os.open(path, flags | os.O_CREAT | os.O_CLOEXEC, modes.file)
    try:
        if os.fstat(fd).st_mode & 0o7777 != modes.file:
            os.fchmod(fd, modes.file)
    except BaseException:
        os.close(fd)
        raise
    return fd


def write_private_file(path: Path, data: bytes) -> None:
    """Write ``data`` as file ``path`` (replacing its content), 0600 (not fsynced)."""
    with os.fdopen(open_private(path, os.O_WRONLY | os.O_TRUNC), "wb") as file:
        file.write(data)


def make_private(path: Path, modes: FileModes = PRIVATE) -> None:
    """Make file ``path``, which a library created, ``modes.file`` (0600)."""
    os.chmod(path, modes.file)
