"""The spool: batches sealed on local disk that wait for their upload to an object store.

With ``handoff.staging`` in an object store the handoff sink seals into the spool folder
(``handoff.spool_dir``), in the staging layout (``<spool>/<pipeline>/<N:08d>/<host>/``). Before
a batch is uploaded, the upload thread writes beside its manifest a seal record
(``_seal_record.json``): the files' offsets at the batch's barrier, which the metastore records
with the batch once the upload is complete. A collector restarted after a crash finds the batch
and its record there and finishes the job (``recover_spool``); a batch without a record (the
crash came between the local seal and the record) is dropped, and its lines, never recorded,
are read again.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from pipeline_core._fault_points import FaultPoint, reached
from pipeline_core._file_modes import write_private_file
from pipeline_core._file_names import restored_path, stored_path
from pipeline_core.sinks import _writeback
from pipeline_core.source import FileRecord, FileState
from pipeline_core.staging_contract import INFLIGHT_DIR, MANIFEST_NAME, PART_SUFFIX, batch_key

SEAL_RECORD_NAME = "_seal_record.json"
SEAL_RECORD_VERSION = 1


@dataclass(frozen=True)
class SpooledBatch:
    """A batch sealed into the spool: its checkpoint, its folder, and (once the upload thread
    saved them) the files' offsets at its barrier."""

    checkpoint_id: int
    folder: Path
    files: tuple[FileRecord, ...] | None = None

    @property
    def recorded_locally(self) -> bool:
        """Whether the seal record was saved (the batch can be recorded after a restart)."""
        return self.files is not None

    def save_record(self) -> None:
        """Write the seal record into the folder, durably (written, fsynced, renamed)."""
        reached(FaultPoint.SEAL_RECORD_SAVING)
        assert self.files is not None
        document = {
            "version": SEAL_RECORD_VERSION,
            "checkpoint_id": self.checkpoint_id,
            "files": [
                {**asdict(record), "path": stored_path(record.path), "updated_at": None}
                for record in self.files
            ],
        }
        temporary = self.folder / f"{SEAL_RECORD_NAME}.tmp"
        write_private_file(temporary, json.dumps(document, sort_keys=True).encode())
        _writeback.fsync_path(temporary)
        os.replace(temporary, self.folder / SEAL_RECORD_NAME)
        _writeback.fsync_path(self.folder)

    def part_bytes(self) -> int:
        """Bytes the batch's part files hold (what the spool budget counted)."""
        return sum(p.stat().st_size for p in self.folder.glob(f"*{PART_SUFFIX}"))

    def remove(self) -> None:
        """Delete the folder, and its checkpoint's folder once no other batch is in it."""
        shutil.rmtree(self.folder, ignore_errors=True)
        with contextlib.suppress(OSError):
            self.folder.parent.rmdir()

    @classmethod
    def load(cls, checkpoint_id: int, folder: Path) -> SpooledBatch:
        """The batch in ``folder`` with its seal record, when it has a readable one."""
        path = folder / SEAL_RECORD_NAME
        try:
            document: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
            if document.get("version") != SEAL_RECORD_VERSION:
                return cls(checkpoint_id, folder)
            files = tuple(
                FileRecord(
                    **{
                        **entry,
                        "path": restored_path(entry["path"]),
                        "state": FileState(entry["state"]),
                    }
                )
                for entry in document["files"]
            )
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return cls(checkpoint_id, folder)
        return cls(checkpoint_id, folder, files)


def spooled_batches(spool: Path, pipeline: str, host: str) -> list[SpooledBatch]:
    """The batches of ``pipeline`` sealed by ``host`` into ``spool``, oldest checkpoint first
    (a folder without a manifest is not sealed, and not listed)."""
    root = spool / pipeline
    if not root.is_dir():
        return []
    found = []
    for checkpoint in root.iterdir():
        if checkpoint.name == INFLIGHT_DIR or not checkpoint.name.isdigit():
            continue
        folder = spool / batch_key(pipeline, int(checkpoint.name), host)
        if (folder / MANIFEST_NAME).is_file():
            found.append(SpooledBatch.load(int(checkpoint.name), folder))
    return sorted(found, key=lambda batch: batch.checkpoint_id)
