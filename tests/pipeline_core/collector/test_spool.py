"""Spooled batches: found in seal order, their seal record saved and read back."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

from pipeline_core.collector._spool import SEAL_RECORD_NAME, SpooledBatch, spooled_batches
from pipeline_core.source import FileRecord, FileState
from tests.support.object_store import sealed_batch

RECORD = FileRecord(
    "access",
    "00000000000000aa",
    "/logs/access.log",
    2049,
    77,
    1024,
    123,
    4096,
    FileState.LIVE,
    "ab",
)


def test_should_list_sealed_batches_oldest_first_and_skip_unsealed_ones(tmp_path: Path) -> None:
    spool = tmp_path / "spool"
    for checkpoint in (12, 3):
        sealed_batch(spool, parts=1, part_bytes=4096, checkpoint_id=checkpoint)
    (spool / "web" / "00000020" / "host-a").mkdir(parents=True)  # no manifest: not sealed
    (spool / "web" / "_inflight" / "host-a").mkdir(parents=True)

    found = spooled_batches(spool, "web", "host-a")

    assert [batch.checkpoint_id for batch in found] == [3, 12]
    assert spooled_batches(spool, "web", "host-b") == []
    assert not any(batch.recorded_locally for batch in found)


def test_should_read_back_the_seal_record_it_saved(tmp_path: Path) -> None:
    folder = sealed_batch(tmp_path / "spool", parts=1, part_bytes=4096, checkpoint_id=5)
    SpooledBatch(5, folder, (RECORD,)).save_record()

    (found,) = spooled_batches(tmp_path / "spool", "web", "host-a")

    assert found.files == (RECORD,) and found.recorded_locally


def test_should_save_a_file_name_of_any_bytes_as_text_and_read_it_back(tmp_path: Path) -> None:
    folder = sealed_batch(tmp_path / "spool", parts=1, part_bytes=4096, checkpoint_id=5)
    record = dataclasses.replace(RECORD, path=os.fsdecode(b"/logs/bad\xff.log"))
    SpooledBatch(5, folder, (record,)).save_record()

    (found,) = spooled_batches(tmp_path / "spool", "web", "host-a")

    assert found.files == (record,)
    saved = json.loads((folder / SEAL_RECORD_NAME).read_text(encoding="utf-8"))
    assert [f["path"] for f in saved["files"]] == ["escaped:/logs/bad\\xff.log"]


def test_should_take_an_unreadable_record_for_none(tmp_path: Path) -> None:
    folder = sealed_batch(tmp_path / "spool", parts=1, part_bytes=4096, checkpoint_id=5)
    (folder / SEAL_RECORD_NAME).write_text("{not json")

    (found,) = spooled_batches(tmp_path / "spool", "web", "host-a")

    assert not found.recorded_locally


def test_should_remove_the_batch_and_its_empty_checkpoint_folder(tmp_path: Path) -> None:
    folder = sealed_batch(tmp_path / "spool", parts=2, part_bytes=4096, checkpoint_id=5)
    batch = SpooledBatch(5, folder)
    assert batch.part_bytes() == sum(p.stat().st_size for p in folder.glob("part-*")) > 0

    batch.remove()

    assert not folder.parent.exists() and (tmp_path / "spool" / "web").is_dir()
