"""Where the landing job reads staging from: a local (or mounted) folder, or an object store.

A staging location is a path (``/data/staging/web/00000003``) or a URL
(``s3://bucket/prefix/web/00000003``, ``gs://``, ``abfs://``); the driver and the executors
read it through the same few calls: :func:`list_folders` and :func:`read_whole` (the
manifests), :func:`file_sizes` (the parts' sizes) and :func:`open_part`, a
:class:`PartReader` of ranged reads (the parts' bytes). A path is read with the operating
system's calls (``os.pread``: the local fast path, as fast as before); a URL through its
Arrow filesystem (``pipeline_core.storage``), each read one ranged request to the store. No
Hadoop filesystem is involved: the cluster needs no S3 connector. Only a URL's reads import
``pipeline_core.storage`` (shipped in the landing job's archive).

The store's credentials and endpoint come from the environment of the process that reads
(``AWS_*``, ``AZURE_*``, Application Default Credentials), never from the URL; the driver hands
its own to the Python workers that read (:func:`reader_environment`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from functools import lru_cache
from typing import Protocol
from urllib.parse import urlparse

import pyarrow.fs as pafs


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
    if "://" not in folder:
        return os.path.join(folder, name)
    base, mark, query = folder.partition("?")
    return f"{base.rstrip('/')}/{name}{mark}{query}"


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
    folder, name = parent_and_name(location)
    filesystem, path = _filesystem(folder)
    return ArrowPartReader(filesystem, f"{path}/{name}")


def read_whole(location: str) -> bytes:
    """The whole file at ``location`` (a manifest).

    Raises:
        FileNotFoundError: there is none.
        OSError: it cannot be read.
    """
    if is_local(location):
        with open(local_path(location), "rb") as handle:
            return handle.read()
    folder, name = parent_and_name(location)
    filesystem, path = _filesystem(folder)
    with filesystem.open_input_stream(f"{path}/{name}") as stream:
        return bytes(stream.read())


def list_folders(location: str) -> list[str] | None:
    """The names of the folders directly in the folder ``location``, sorted; ``None`` when it
    does not exist (in an object store: no object has its prefix).

    Raises:
        OSError: it cannot be listed.
    """
    if is_local(location):
        path = local_path(location)
        if not os.path.isdir(path):
            return None
        return sorted(entry.name for entry in os.scandir(path) if entry.is_dir())
    filesystem, path = _filesystem(location)
    infos = filesystem.get_file_info(pafs.FileSelector(path, allow_not_found=True))
    if not infos and filesystem.get_file_info(path).type is pafs.FileType.NotFound:
        return None
    return sorted(info.base_name for info in infos if info.type is pafs.FileType.Directory)


def file_sizes(folder: str) -> dict[str, int]:
    """The sizes of the files directly in the folder ``folder``, by name (empty when it does
    not exist).

    Raises:
        OSError: it cannot be listed.
    """
    if is_local(folder):
        path = local_path(folder)
        if not os.path.isdir(path):
            return {}
        return {entry.name: entry.stat().st_size for entry in os.scandir(path) if entry.is_file()}
    filesystem, path = _filesystem(folder)
    infos = filesystem.get_file_info(pafs.FileSelector(path, allow_not_found=True))
    return {
        info.base_name: int(info.size or 0) for info in infos if info.type is pafs.FileType.File
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


@lru_cache(maxsize=64)
def _filesystem(folder: str) -> tuple[pafs.FileSystem, str]:
    """The Arrow filesystem of a store's folder and its path there, built once per folder and
    process (a worker reads many segments of one batch folder). ``pipeline_core.storage`` is
    imported here: executors that read local staging need nothing of ``pipeline_core``."""
    from pipeline_core.storage import location_filesystem

    return location_filesystem(folder)
