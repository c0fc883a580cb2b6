"""Where the landing job reads staging from: a local (or mounted) folder, or an object store.

A staging location is a path (``/data/staging/web/00000003``) or a URL
(``s3://bucket/prefix/web/00000003``, ``gs://``, ``abfs://``); the driver and the executors
read it through the same few calls: :func:`list_folders` and :func:`read_whole` (the
manifests), :func:`file_sizes` (the parts' sizes) and :func:`open_part`, a
:class:`PartReader` of ranged reads (the parts' bytes). Listings and manifests are read
through the location's Arrow filesystem, resolved as the staging area resolves it
(``pipeline_core.storage.StorageLocation``: a folder is the local filesystem). A part's
bytes are read with ``os.pread`` when it is a path (the executors' local fast path: one
descriptor per part, no copy, nothing of ``pipeline_core`` imported), else by one ranged
request to the store each. No Hadoop filesystem is involved: the cluster needs no S3
connector. ``pipeline_core.storage`` (shipped in the landing job's archive) is imported when
a location is first resolved, not with the module.

The store's credentials and endpoint come from the environment of the process that reads
(``AWS_*``, ``AZURE_*``, Application Default Credentials), never from the URL; the driver hands
its own to the Python workers that read (:func:`reader_environment`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Protocol
from urllib.parse import urlparse

import pyarrow.fs as pafs

if TYPE_CHECKING:
    from pipeline_core.storage import StorageLocation


class PartReader(Protocol):
    """Ranged reads of one file. Not thread-safe: a thread opens its own."""

    def read_at(self, offset: int, length: int) -> bytes:
        """Up to ``length`` bytes from ``offset``: fewer only where the file ends.

        Raises:
            OSError: the file cannot be read.
        """

    def close(self) -> None:
        """Release the file (a reader is not used after)."""


class LocalPartReader:
    """A local file, read with ``os.pread`` (the descriptor is opened once)."""

    def __init__(self, path: str) -> None:
        self._fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)

    def read_at(self, offset: int, length: int) -> bytes:
        pieces: list[bytes] = []
        done = 0
        while done < length:
            piece = os.pread(self._fd, length - done, offset + done)
            if not piece:
                break
            pieces.append(piece)
            done += len(piece)
        return pieces[0] if len(pieces) == 1 else b"".join(pieces)

    def close(self) -> None:
        os.close(self._fd)


class ArrowPartReader:
    """A file of an Arrow filesystem (an object in a store): each read is one ranged read."""

    def __init__(self, filesystem: pafs.FileSystem, path: str) -> None:
        self._file = filesystem.open_input_file(path)

    def read_at(self, offset: int, length: int) -> bytes:
        size = self._file.size()
        if offset >= size:
            return b""
        return bytes(self._file.read_at(min(length, size - offset), offset))

    def close(self) -> None:
        self._file.close()


def is_local(location: str) -> bool:
    """Whether ``location`` is a path (or a ``file://`` URL) rather than an object store's."""
    return (urlparse(location).scheme or "file") == "file" if "://" in location else True


def local_path(location: str) -> str:
    """The path of a local ``location`` (a ``file://`` URL's path, not %-decoded)."""
    return urlparse(location).path if "://" in location else location


def join(folder: str, name: str) -> str:
    """The location of ``name`` in ``folder`` (a path or a URL, whose query is kept)."""
    return _location(folder).child(name).url


def parent_and_name(location: str) -> tuple[str, str]:
    """``location``'s folder and last name (a URL's query stays with the folder)."""
    if "://" not in location:
        return os.path.dirname(location), os.path.basename(location)
    base, mark, query = location.partition("?")
    folder, _, name = base.rstrip("/").rpartition("/")
    return f"{folder}{mark}{query}", name


def open_part(location: str) -> PartReader:
    """A reader of the file at ``location``.

    Raises:
        OSError: it cannot be opened (missing, unreachable store, refused credentials).
    """
    if is_local(location):
        return LocalPartReader(local_path(location))
    return ArrowPartReader(*_file(location))


def read_whole(location: str) -> bytes:
    """The whole file at ``location`` (a manifest).

    Raises:
        FileNotFoundError: there is none.
        OSError: it cannot be read.
    """
    filesystem, path = _file(location)
    with filesystem.open_input_stream(path) as stream:
        return bytes(stream.read())


def list_folders(location: str) -> list[str] | None:
    """The names of the folders directly in the folder ``location``, sorted; ``None`` when it
    does not exist (in an object store: no object has its prefix).

    Raises:
        OSError: it cannot be listed.
    """
    infos = _listing(location)
    if infos is None:
        return None
    return sorted(info.base_name for info in infos if info.type is pafs.FileType.Directory)


def file_sizes(folder: str) -> dict[str, int]:
    """The sizes of the files directly in the folder ``folder``, by name (empty when it does
    not exist).

    Raises:
        OSError: it cannot be listed.
    """
    return {
        info.base_name: int(info.size or 0)
        for info in _listing(folder) or ()
        if info.type is pafs.FileType.File
    }


def sizes_of(locations: Sequence[str]) -> dict[str, int | None]:
    """The size of each file of ``locations`` (``None``: not there), one listing per folder."""
    folders: dict[str, dict[str, int]] = {}
    sizes: dict[str, int | None] = {}
    for location in locations:
        folder, name = parent_and_name(location)
        if folder not in folders:
            folders[folder] = file_sizes(folder)
        sizes[location] = folders[folder].get(name)
    return sizes


def reader_environment(locations: Sequence[str]) -> dict[str, str]:
    """What a process reading ``locations`` needs of this process's environment: the object
    stores' variables (``pipeline_core.storage.STORE_ENVIRONMENT``) when one of them is in a
    store, else nothing. Values may be secrets: never log or print them."""
    if all(is_local(location) for location in locations):
        return {}
    from pipeline_core.storage import store_environment

    return store_environment()


def _listing(folder: str) -> list[pafs.FileInfo] | None:
    """What is directly in the folder ``folder`` (symlinks followed); None when there is no
    such folder.

    Raises:
        OSError: it cannot be listed.
    """
    filesystem, path = _filesystem(folder)
    try:
        infos: list[pafs.FileInfo] = filesystem.get_file_info(
            pafs.FileSelector(path, allow_not_found=True)
        )
    except NotADirectoryError:  # a file where the folder should be
        return None
    if not infos and filesystem.get_file_info(path).type is pafs.FileType.NotFound:
        return None
    return infos


def _file(location: str) -> tuple[pafs.FileSystem, str]:
    """The Arrow filesystem of the file at ``location`` and its path there."""
    folder, name = parent_and_name(location)
    filesystem, path = _filesystem(folder)
    return filesystem, f"{path}/{name}"


@lru_cache(maxsize=64)
def _filesystem(folder: str) -> tuple[pafs.FileSystem, str]:
    """The Arrow filesystem of a folder and its path there, resolved as the staging area
    resolves it (:meth:`StorageLocation.filesystem`: a path, or a ``file://`` URL, is the local
    filesystem), built once per folder and process (a worker reads many segments of one batch
    folder)."""
    return _location(folder).filesystem()


def _location(folder: str) -> StorageLocation:
    """``folder`` as a :class:`StorageLocation`, taken as given (the landing plan's come parsed
    already). ``pipeline_core.storage`` is imported here, not by the module: executors that
    read local part files (:func:`open_part`) need nothing of ``pipeline_core``.

    Raises:
        LocationError: its scheme is not one Sluice reads.
    """
    from pipeline_core.storage import StorageLocation, StorageScheme

    scheme = urlparse(folder).scheme if "://" in folder else ""
    return StorageLocation(folder, StorageScheme.of(scheme))
