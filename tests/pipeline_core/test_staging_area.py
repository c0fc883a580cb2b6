"""StagingArea on a local folder: where a checkpoint is, which recorded batches are missing,
removing it (the same calls on an object store: tests/pipeline_core/test_operations.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline_core.errors import StorageError
from pipeline_core.staging_contract import MANIFEST_NAME, StagingArea, batch_dir
from pipeline_core.storage import StorageLocation


def area(tmp_path: Path) -> StagingArea:
    return StagingArea(StorageLocation.parse(tmp_path / "staging"), "web")


def seal(tmp_path: Path, checkpoint_id: int, host: str) -> None:
    folder = batch_dir(tmp_path / "staging", "web", checkpoint_id, host)
    folder.mkdir(parents=True)
    (folder / MANIFEST_NAME).write_text("{}")


def test_should_name_a_local_checkpoint_by_its_path_and_no_url(tmp_path: Path) -> None:
    staging = area(tmp_path)

    assert staging.where(7) == str(tmp_path / "staging" / "web" / "00000007")
    assert staging.checkpoint_url(7) is None
    s3 = StagingArea(StorageLocation.parse("s3://bucket/staging?region=eu-west-1"), "web")
    assert (
        s3.where(7) == s3.checkpoint_url(7) == "s3://bucket/staging/web/00000007?region=eu-west-1"
    )


def test_should_name_the_local_folder_a_checkpoint_is_sealed_into(tmp_path: Path) -> None:
    assert area(tmp_path).sealed_dir(7) == tmp_path / "staging" / "web" / "00000007"
    store = StorageLocation.parse("s3://bucket/staging")
    spooled = StagingArea(store, "web", spool=tmp_path / "spool")
    assert spooled.sealed_dir(7) == tmp_path / "spool" / "web" / "00000007"
    with pytest.raises(StorageError, match="no spool"):
        StagingArea(store, "web").sealed_dir(7)


def test_should_name_a_hosts_batch_where_the_collector_seals_or_uploads_it(
    tmp_path: Path,
) -> None:
    assert area(tmp_path).batch(7, "web-1").local_path == batch_dir(
        tmp_path / "staging", "web", 7, "web-1"
    )
    s3 = StagingArea(StorageLocation.parse("s3://bucket/staging?region=eu-west-1"), "web")
    assert s3.batch(7, "web-1").url == "s3://bucket/staging/web/00000007/web-1?region=eu-west-1"
    with pytest.raises(ValueError, match="host"):
        s3.batch(7, "../web-2")


def test_should_name_the_recorded_batches_not_sealed_and_know_nothing_without_staging(
    tmp_path: Path,
) -> None:
    staging = area(tmp_path)
    assert staging.missing_batches(3, ["a", "b"]) is None  # no staging at all: nothing known

    seal(tmp_path, 3, "a")
    batch_dir(tmp_path / "staging", "web", 3, "b").mkdir()  # a batch without its manifest

    missing = staging.missing_batches(3, ["a", "b"])
    assert missing is not None
    assert missing.startswith(f"recorded batches missing under {staging.checkpoint(3)}: b (")
    assert staging.missing_batches(3, ["a"]) is None


def test_should_remove_a_checkpoint_once(tmp_path: Path) -> None:
    staging = area(tmp_path)
    seal(tmp_path, 4, "a")
    seal(tmp_path, 5, "a")

    assert staging.remove(4)
    assert not staging.remove(4)
    assert not Path(staging.where(4)).exists() and Path(staging.where(5)).is_dir()


def test_should_refuse_a_pipeline_name_that_leaves_the_staging_folder(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="would leave the staging folder"):
        StagingArea(StorageLocation.parse(tmp_path), "..")
