"""Uploading a batch sealed on local disk to an object store: parts first, the manifest last.

The batch's folder on local disk is the one :class:`HandoffWriter` seals (its parts and
``_manifest.json``); the target is the same layout below the staging location,
``<staging>/<pipeline>/<checkpoint:08d>/<host>/``. An upload

1. deletes the target's manifest if an earlier, interrupted attempt left one (a batch whose
   parts are being replaced must not look complete),
2. copies each part in blocks (pyarrow's S3 output stream sends a large object as a multipart
   upload), checking the CRC-32 of the bytes sent against the manifest's (the local copy is
   intact) and then the object's size and, read back, its CRC-32 (the store holds them),
3. deletes objects of the target that the manifest does not list (parts of an earlier
   attempt),
4. writes the manifest last: the batch is visible only once every part is stored.

It is idempotent: an interrupted upload is simply done again.
"""

from __future__ import annotations

import logging
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING

from pipeline_core._fault_points import FaultPoint, reached
from pipeline_core.errors import CorruptBatchError, StorageError
from pipeline_core.staging_contract import (
    MANIFEST_NAME,
    Manifest,
    ManifestError,
    ManifestPart,
    read_manifest,
)
from pipeline_core.storage import StorageLocation

if TYPE_CHECKING:  # Arrow is imported where a batch is uploaded, not where one is collected
    import pyarrow.fs as pafs

log = logging.getLogger(__name__)

BLOCK_BYTES = 8 * 1024 * 1024
"""Bytes read from a local part and written to the store at a time (S3's multipart part size
is pyarrow's own, 10 MiB and up)."""


class ReadBack(Enum):
    """Whether an uploaded part is read back from the store to check its CRC-32."""

    VERIFY = "verify"
    """Read every part back (twice the traffic; catches a store that kept other bytes)."""
    SIZE_ONLY = "size_only"
    """Check the stored object's size only."""


@dataclass(frozen=True)
class UploadedBatch:
    """A batch whose parts and manifest are stored at ``location``."""

    location: StorageLocation
    manifest: Manifest
    bytes: int
    """Part bytes uploaded."""


def upload_sealed_batch(
    local: Path, target: StorageLocation, *, read_back: ReadBack = ReadBack.VERIFY
) -> UploadedBatch:
    """Upload the batch sealed in folder ``local`` to ``target`` (its folder in the store):
    parts first, the manifest last (see the module's doc). Idempotent.

    Raises:
        CorruptBatchError: the local batch has no readable manifest, or a part is missing or
            does not match the manifest's size or CRC-32 (retrying cannot help).
        StorageError: the store could not be reached or written, or kept other bytes than were
            sent (retrying may help; the target is left without a manifest).
    """
    try:
        manifest = read_manifest(local)
    except ManifestError as exc:
        raise CorruptBatchError(f"cannot upload {local}: {exc}") from exc
    manifest_bytes = (local / MANIFEST_NAME).read_bytes()
    filesystem, root = target.filesystem()
    try:
        _delete_if_present(filesystem, f"{root}/{MANIFEST_NAME}")
        for part in manifest.parts:
            reached(FaultPoint.PART_UPLOADING)
            _upload_part(local / part.name, filesystem, f"{root}/{part.name}", part, read_back)
            reached(FaultPoint.PART_UPLOADED)
        _delete_strays(filesystem, root, {part.name for part in manifest.parts})
        reached(FaultPoint.STRAYS_DELETED)
        with filesystem.open_output_stream(f"{root}/{MANIFEST_NAME}") as stream:
            stream.write(manifest_bytes)
    except (OSError, ValueError) as exc:
        raise StorageError(f"cannot upload {local} to {target}: {_one_line(exc)}") from exc
    return UploadedBatch(target, manifest, sum(part.bytes for part in manifest.parts))


def verify_local_batch(local: Path) -> Manifest:
    """The manifest of the batch sealed in ``local``, once every part was read and matched
    its size and CRC-32.

    Raises:
        CorruptBatchError: as :func:`upload_sealed_batch`.
    """
    try:
        manifest = read_manifest(local)
    except ManifestError as exc:
        raise CorruptBatchError(f"{local}: {exc}") from exc
    for part in manifest.parts:
        path = local / part.name
        try:
            with path.open("rb") as stream:
                crc, size = _crc_of(stream.read, BLOCK_BYTES)
        except OSError as exc:
            raise CorruptBatchError(f"cannot read part {path}: {exc}") from exc
        _check_local(path, part, crc, size)
    return manifest


def _upload_part(
    path: Path, filesystem: pafs.FileSystem, key: str, part: ManifestPart, read_back: ReadBack
) -> None:
    crc = size = 0
    try:
        source = path.open("rb")
    except OSError as exc:
        raise CorruptBatchError(f"cannot read part {path}: {exc}") from exc
    with source, filesystem.open_output_stream(key) as stream:
        while block := source.read(BLOCK_BYTES):
            crc = zlib.crc32(block, crc)
            size += len(block)
            stream.write(block)
        # Before the stream closes: a part that is not the sealed one fails the upload
        # (pyarrow completes the object at close; no manifest will name it).
        _check_local(path, part, crc, size)
    stored = filesystem.get_file_info(key)
    if stored.size != part.bytes:
        raise StorageError(f"{key}: the store holds {stored.size} bytes, {part.bytes} were sent")
    if read_back is ReadBack.VERIFY:
        with filesystem.open_input_stream(key) as stream:
            stored_crc, _ = _crc_of(stream.read, BLOCK_BYTES)
        if f"{stored_crc:08x}" != part.crc32:
            raise StorageError(
                f"{key}: the stored object's CRC-32 is {stored_crc:08x}, not {part.crc32}"
            )


def _check_local(path: Path, part: ManifestPart, crc: int, size: int) -> None:
    if size != part.bytes or f"{crc:08x}" != part.crc32:
        raise CorruptBatchError(
            f"part {path} holds {size} bytes of CRC-32 {crc:08x}; its manifest says "
            f"{part.bytes} bytes of CRC-32 {part.crc32}"
        )


def _crc_of(read: Callable[[int], bytes], block: int) -> tuple[int, int]:
    crc = size = 0
    while data := read(block):
        crc = zlib.crc32(data, crc)
        size += len(data)
    return crc, size


def _delete_if_present(filesystem: pafs.FileSystem, key: str) -> None:
    import pyarrow.fs as pafs

    if filesystem.get_file_info(key).type is not pafs.FileType.NotFound:
        filesystem.delete_file(key)


def _delete_strays(filesystem: pafs.FileSystem, root: str, keep: set[str]) -> None:
    import pyarrow.fs as pafs

    selector = pafs.FileSelector(root, recursive=True, allow_not_found=True)
    for info in filesystem.get_file_info(selector):
        if info.type is pafs.FileType.File and info.base_name not in keep:
            log.info("removing %s, left by an earlier upload of the batch", info.path)
            filesystem.delete_file(info.path)


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())
