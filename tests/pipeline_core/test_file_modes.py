"""What Sluice creates under ``data_dir``, staging and the spool is its user's alone: files
0600 in folders 0700, whatever the umask; uploaded objects get no ACL (never public)."""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from pipeline_core._file_modes import make_private_dirs
from pipeline_core.cli import main
from pipeline_core.collector import MetricsExporter
from pipeline_core.collector._spool import SpooledBatch
from pipeline_core.config import METASTORE_URL_ENV
from pipeline_core.metastore import Metastore
from pipeline_core.sinks import upload_sealed_batch
from pipeline_core.source import FileRecord, FileState
from pipeline_core.storage import StorageLocation
from pipeline_core.testing import append
from tests.pipeline_core.collector.test_metric_families import metrics
from tests.support.object_store import S3Bucket, sealed_batch


@pytest.fixture(autouse=True)
def lax_umask(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The usual umask (0o022: everything world-readable unless a mode says otherwise), and
    no metastore URL from the environment (the default SQLite file under data_dir)."""
    monkeypatch.delenv(METASTORE_URL_ENV, raising=False)
    previous = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(previous)


def modes(root: Path) -> dict[str, str]:
    """Every entry under ``root`` (and ``root``), relative name -> octal mode."""
    found = {".": oct(stat.S_IMODE(root.stat().st_mode))}
    for path in root.rglob("*"):
        found[path.relative_to(root).as_posix()] = oct(stat.S_IMODE(path.lstat().st_mode))
    return found


def not_private(root: Path) -> dict[str, str]:
    """The entries under ``root`` that are not 0700 folders or 0600 files."""
    wrong = {}
    for name, mode in modes(root).items():
        expected = "0o700" if (root / name).is_dir() else "0o600"
        if mode != expected:
            wrong[name] = mode
    return wrong


def raw_pipeline(folder: Path, **keys: Any) -> Path:
    """Pipeline ``web_access`` reading ``folder/logs/access.log*`` as raw lines into
    ``folder/data``; ``keys``: more top-level keys."""
    config = folder / "web_access.yaml"
    document = {
        "name": "web_access",
        "sources": [{"name": "access", "paths": ["logs/access.log*"], "format": "raw"}],
        "data_dir": "data",
        "collector": {"host": "test-host"},
        **keys,
    }
    config.write_text(yaml.safe_dump(document))
    return config


@pytest.mark.timeout(60)
def test_should_stage_and_keep_state_in_files_only_their_user_may_read(tmp_path: Path) -> None:
    log = tmp_path / "logs" / "access.log"
    append(log, *(f"line {i}".encode() for i in range(30)))
    log.chmod(0o640)
    assert main(["collect", str(raw_pipeline(tmp_path)), "--once"]) == 0

    data = tmp_path / "data"
    staged = modes(data / "staging")
    assert "web_access/00000001/test-host/part-access-00000.lines" in staged
    assert "web_access/00000001/test-host/_manifest.json" in staged
    assert (data / "sluice.db").is_file()
    assert not_private(data) == {}  # data_dir, staging, the parts, sluice.db (-wal, -shm)


@pytest.mark.timeout(60)
def test_should_open_staging_to_the_group_only_when_asked(tmp_path: Path) -> None:
    append(tmp_path / "logs" / "access.log", *(f"line {i}".encode() for i in range(5)))
    handoff = {"staging_dir": "shared/staging", "staging_access": "group"}

    assert main(["collect", str(raw_pipeline(tmp_path, handoff=handoff)), "--once"]) == 0

    staged = modes(tmp_path / "shared" / "staging")
    batch = "web_access/00000001/test-host"
    assert staged[f"{batch}/part-access-00000.lines"] == "0o640"
    assert staged[f"{batch}/_manifest.json"] == "0o640"
    assert {staged[name] for name in (".", "web_access", batch)} == {"0o2750"}
    assert not_private(tmp_path / "data") == {}  # the metastore and the rest: the owner's


def test_should_create_the_sqlite_metastore_and_its_wal_and_shm_0600(tmp_path: Path) -> None:
    metastore = Metastore.open(f"sqlite:///{tmp_path / 'state' / 'sluice.db'}")
    try:
        with metastore.engine.connect():  # open: the -wal and -shm files are there
            metastore.request_checkpoint("web")

            assert {"sluice.db", "sluice.db-wal", "sluice.db-shm"} <= set(modes(tmp_path / "state"))
            assert not_private(tmp_path / "state") == {}
    finally:
        metastore.close()


def test_should_create_missing_parents_0700_and_leave_existing_folders_alone(
    tmp_path: Path,
) -> None:
    existing = tmp_path / "existing"
    existing.mkdir(mode=0o755)
    existing.chmod(0o755)

    make_private_dirs(existing / "a" / "b" / "c")
    make_private_dirs(existing / "a" / "b" / "c")  # already there: nothing to do

    assert not_private(existing) == {".": "0o755"}  # the folder that was there: as it was
    (existing / "file").write_bytes(b"")
    with pytest.raises(FileExistsError):
        make_private_dirs(existing / "file")


def test_should_write_a_spooled_batches_seal_record_0600(tmp_path: Path) -> None:
    folder = tmp_path / "spool" / "web" / "00000001" / "host-a"
    make_private_dirs(folder)
    record = FileRecord(
        "access", "00000000000000aa", "/logs/a.log", 1, 2, 16, 7, 10, FileState.LIVE
    )

    SpooledBatch(1, folder, (record,)).save_record()

    assert not_private(tmp_path / "spool") == {}
    assert SpooledBatch.load(1, folder).recorded_locally


def test_should_write_the_collectors_metrics_files_0600(tmp_path: Path) -> None:
    exporter = MetricsExporter(lambda: [metrics()], lambda name: tmp_path / "data", interval=60)

    exporter.write()

    assert {"collector/web.json", "collector/metrics.prom"} <= set(modes(tmp_path / "data"))
    assert not_private(tmp_path / "data") == {}


class RecordingFilesystem:
    """A filesystem that hands every call to the real one, keeping how each object was opened
    for writing."""

    def __init__(self, real: Any) -> None:
        self._real = real
        self.opened: list[tuple[str, dict[str, Any]]] = []

    def open_output_stream(self, path: str, *args: Any, **kwargs: Any) -> Any:
        self.opened.append((path, {"args": args, **kwargs}))
        return self._real.open_output_stream(path, *args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


def test_should_upload_objects_without_any_acl(
    tmp_path: Path, s3_bucket: S3Bucket, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No ACL (nor any metadata that could carry one: Arrow sends an ``ACL`` metadata key as
    ``x-amz-acl``) is put with an object: it gets the bucket's own, private by default."""
    filesystems: list[RecordingFilesystem] = []
    real = StorageLocation.filesystem

    def recording(location: StorageLocation) -> tuple[Any, str]:
        filesystem, root = real(location)
        filesystems.append(RecordingFilesystem(filesystem))
        return filesystems[-1], root

    monkeypatch.setattr(StorageLocation, "filesystem", recording)
    batch = sealed_batch(tmp_path / "spool", parts=2, part_bytes=64 * 1024)

    upload_sealed_batch(batch, StorageLocation.parse(s3_bucket.url("staging/web/1/host-a")))

    opened = [call for filesystem in filesystems for call in filesystem.opened]
    assert len(opened) == 3  # two parts, then the manifest
    for path, options in opened:
        assert options == {"args": ()}, path  # no metadata: no ACL, no grant
    log = s3_bucket.server.log.read_text(errors="replace")
    assert not re.search(r"[?&]acl\b", log, re.IGNORECASE)  # nothing asked about ACLs
