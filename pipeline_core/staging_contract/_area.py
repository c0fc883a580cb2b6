"""Where one pipeline's sealed checkpoints are: the one owner of ``<staging>/<pipeline>/
<checkpoint:08d>`` for a local folder and an object store alike (both through Arrow
filesystems: a folder is the local one)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pipeline_core.errors import StorageError
from pipeline_core.staging_contract._layout import (
    MANIFEST_NAME,
    batch_key,
    checkpoint_dir,
    checkpoint_key,
    path_segment,
)
from pipeline_core.storage import StorageLocation

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class StagingArea:
    """A pipeline's staging: ``location`` (``handoff.staging``, ``handoff.staging_dir`` or
    ``<data_dir>/staging``) and, below it, ``<pipeline>/<checkpoint:08d>/<host>`` per sealed
    batch.

    The collector seals into a local folder (with staging in an object store, its spool, from
    which batches are uploaded to :meth:`batch`): this says where they are once sealed and
    uploaded, which the landing job reads, the landing plan checks and retention removes.
    """

    location: StorageLocation
    pipeline: str
    spool: Path | None = None
    """With staging in an object store, the local folder the collector seals batches into
    before uploading them (``handoff.spool_dir``); unused with a local staging folder."""

    def __post_init__(self) -> None:
        path_segment(self.pipeline, "pipeline")

    @property
    def is_local(self) -> bool:
        return self.location.is_local

    def checkpoint(self, checkpoint_id: int) -> StorageLocation:
        """``<staging>/<pipeline>/<checkpoint:08d>``: the checkpoint's batches, one per host."""
        return self.location.child(*checkpoint_key(self.pipeline, checkpoint_id).split("/"))

    def batch(self, checkpoint_id: int, host: str) -> StorageLocation:
        """``<staging>/<pipeline>/<checkpoint:08d>/<host>``: one host's sealed batch, where the
        collector uploads it from its spool."""
        return self.location.child(*batch_key(self.pipeline, checkpoint_id, host).split("/"))

    def sealed_dir(self, checkpoint_id: int) -> Path:
        """The local folder the collectors seal the checkpoint into: its folder in a local
        staging folder, else ``<spool>/<pipeline>/<checkpoint:08d>``.

        Raises:
            StorageError: staging is in an object store and no ``spool`` was given.
        """
        if self.is_local:
            return checkpoint_dir(self.location.local_path, self.pipeline, checkpoint_id)
        if self.spool is None:
            raise StorageError(f"the staging {self.location} has no spool folder")
        return checkpoint_dir(self.spool, self.pipeline, checkpoint_id)

    def where(self, checkpoint_id: int) -> str:
        """Where the landing job reads the checkpoint: a local folder's path (as the collectors
        seal it), or its URL in an object store (its options kept)."""
        folder = self.checkpoint(checkpoint_id)
        return str(folder.local_path) if self.is_local else folder.url

    def checkpoint_url(self, checkpoint_id: int) -> str | None:
        """With staging in an object store, the checkpoint's URL there (its options kept);
        None for a local folder."""
        return None if self.is_local else self.checkpoint(checkpoint_id).url

    def missing_batches(self, checkpoint_id: int, hosts: Sequence[str]) -> str | None:
        """Why the batches of ``hosts`` cannot be landed: the error when one has no sealed
        manifest; None when all have one, or when the pipeline's staging cannot be seen at all
        (nothing is known then: a folder not mounted, a store that cannot be asked; the
        landing job then says what is wrong)."""
        import pyarrow.fs as pafs

        folder = self.checkpoint(checkpoint_id)
        try:
            filesystem, path = folder.filesystem()
            if filesystem.get_file_info(path.rpartition("/")[0]).type is pafs.FileType.NotFound:
                return None
            manifests = filesystem.get_file_info([f"{path}/{h}/{MANIFEST_NAME}" for h in hosts])
        except (OSError, ValueError, StorageError) as exc:
            log.warning(
                "cannot look for the batches of checkpoint %d in %s: %s", checkpoint_id, folder, exc
            )
            return None
        missing = [
            host
            for host, manifest in zip(hosts, manifests, strict=True)
            if manifest.type is not pafs.FileType.File
        ]
        if not missing:
            return None
        where = "sealed batch folder" if self.is_local else "sealed batch in the store"
        return (
            f"recorded batches missing under {folder}: {', '.join(missing)} (no {where} holds "
            "their lines any more)"
        )

    def remove(self, checkpoint_id: int) -> bool:
        """Delete the checkpoint's batches; whether there were any.

        Raises:
            StorageError: the store could not be reached or the objects not deleted.
        """
        import pyarrow.fs as pafs

        folder = self.checkpoint(checkpoint_id)
        filesystem, path = folder.filesystem()
        try:
            if filesystem.get_file_info(path).type is pafs.FileType.NotFound:
                return False
            filesystem.delete_dir(path)
        except (OSError, ValueError) as exc:
            raise StorageError(f"cannot delete the staging of {folder}: {exc}") from exc
        return True
