"""Where the landing job reads staging from: local folders and an S3 server (moto on loopback),
through the same calls."""

from __future__ import annotations

from pathlib import Path

import pytest

from spark_jobs.part_files import (
    ArrowPartReader,
    LocalPartReader,
    is_local,
    join,
    list_folders,
    open_part,
    parent_and_name,
    read_whole,
    reader_environment,
    sizes_of,
)
from tests.support.object_store import S3Bucket

pytestmark = [pytest.mark.timeout(120)]

DATA = bytes(range(256)) * 64


def staged(tmp_path: Path) -> Path:
    """A checkpoint-like folder: two batch folders, one file each, and a stray file."""
    root = tmp_path / "web" / "00000001"
    for host in ("web-2", "web-1"):
        (root / host).mkdir(parents=True)
        (root / host / "part-a-00000.lines").write_bytes(DATA)
    (root / "stray.txt").write_bytes(b"x")
    return root


@pytest.fixture(params=["local", "s3"])
def location(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The folder of ``staged``, as a path or as its copy's URL on the S3 server."""
    root = staged(tmp_path)
    if request.param == "local":
        return str(root)
    bucket: S3Bucket = request.getfixturevalue("s3_bucket")
    return bucket.upload(root, "staging/web/00000001")


def test_the_batch_folders_are_listed_by_name(location: str) -> None:
    assert list_folders(location) == ["web-1", "web-2"]
    assert list_folders(join(location, "nothing-here")) is None


def test_ranged_reads_return_the_bytes_asked_for_and_stop_at_the_end(location: str) -> None:
    reader = open_part(join(join(location, "web-1"), "part-a-00000.lines"))
    try:
        assert reader.read_at(0, 10) == DATA[:10]
        assert reader.read_at(1000, 3000) == DATA[1000:4000]
        assert reader.read_at(len(DATA) - 5, 100) == DATA[-5:]
        assert reader.read_at(len(DATA) + 1, 10) == b""
    finally:
        reader.close()


def test_sizes_come_from_one_listing_per_folder(location: str) -> None:
    part = join(join(location, "web-2"), "part-a-00000.lines")
    gone = join(join(location, "web-2"), "part-b-00000.lines")

    assert sizes_of([part, gone]) == {part: len(DATA), gone: None}
    assert read_whole(part) == DATA


def test_a_path_is_read_by_the_operating_system_and_a_url_through_arrow(
    tmp_path: Path, s3_bucket: S3Bucket
) -> None:
    url = s3_bucket.upload(staged(tmp_path), "staging/web/00000001")
    local = open_part(str(tmp_path / "web" / "00000001" / "web-1" / "part-a-00000.lines"))
    stored = open_part(f"{url}/web-1/part-a-00000.lines")
    try:
        assert isinstance(local, LocalPartReader)
        assert isinstance(stored, ArrowPartReader)
    finally:
        local.close()
        stored.close()


def test_a_missing_part_cannot_be_opened(location: str) -> None:
    with pytest.raises(OSError):
        open_part(join(join(location, "web-1"), "part-z-00000.lines"))


def test_a_urls_options_stay_with_its_folder() -> None:
    folder = "s3://logs/staging/web/00000001?region=eu-west-1"

    assert join(folder, "web-1") == "s3://logs/staging/web/00000001/web-1?region=eu-west-1"
    assert parent_and_name(join(folder, "web-1")) == (folder, "web-1")
    assert parent_and_name("/staging/web/00000001") == ("/staging/web", "00000001")
    assert is_local("/staging") and is_local("file:///staging") and not is_local(folder)


def test_readers_of_a_store_get_its_variables_and_readers_of_paths_none(
    s3_bucket: S3Bucket,
) -> None:
    assert reader_environment(["/staging/web/00000001/web-1/part-a-00000.lines"]) == {}
    handed = reader_environment(["/staging/a", f"{s3_bucket.url()}/web/00000001/web-1/a"])

    assert handed["AWS_ENDPOINT_URL"] == s3_bucket.server.endpoint
    assert handed["AWS_SECRET_ACCESS_KEY"] == s3_bucket.server.environment["AWS_SECRET_ACCESS_KEY"]
    assert "PATH" not in handed
