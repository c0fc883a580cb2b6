"""An S3-compatible server on loopback for the tests: moto's standalone server.

``s3_server`` (session) starts ``moto_server`` on 127.0.0.1 with a free port, in a process
group of its own, waits until it answers, and stops it at the end of the session.
``s3_bucket`` (per test) creates a fresh bucket on it and sets the environment a Sluice
process reads its credentials and endpoint from (``AWS_ACCESS_KEY_ID``,
``AWS_SECRET_ACCESS_KEY``, ``AWS_REGION``, ``AWS_ENDPOINT_URL``), so a pipeline file names only
``s3://<bucket>/<prefix>``. ``module_s3_bucket`` is the same for a whole test module (its
variables set until the module's last test ends).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import pyarrow.fs as pafs
import pytest

from tests.support.processes import free_port, stop_group

ACCESS_KEY = "sluice-test-key"
SECRET_KEY = "sluice-test-secret"
REGION = "us-east-1"
START_SECONDS = 60.0


@dataclass(frozen=True)
class S3Server:
    """A running moto server: its endpoint URL (``http://127.0.0.1:<port>``) and its request
    log (one line per request: multipart uploads show as ``?uploads`` and ``partNumber=``)."""

    endpoint: str
    log: Path

    @property
    def environment(self) -> dict[str, str]:
        """What a process needs to reach the server through the standard AWS variables."""
        return {
            "AWS_ACCESS_KEY_ID": ACCESS_KEY,
            "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
            "AWS_REGION": REGION,
            "AWS_DEFAULT_REGION": REGION,
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_EC2_METADATA_DISABLED": "true",
        }

    def filesystem(self) -> pafs.S3FileSystem:
        """pyarrow's S3 filesystem on the server, with explicit options (no environment)."""
        scheme, _, address = self.endpoint.partition("://")
        return pafs.S3FileSystem(
            access_key=ACCESS_KEY,
            secret_key=SECRET_KEY,
            region=REGION,
            endpoint_override=address,
            scheme=scheme,
            allow_bucket_creation=True,
        )


@dataclass(frozen=True)
class S3Bucket:
    """A bucket of its own for one test on the session's server."""

    server: S3Server
    name: str

    def url(self, prefix: str = "staging") -> str:
        return f"s3://{self.name}/{prefix}"

    def keys(self, prefix: str = "") -> list[str]:
        """Every object under ``prefix`` of the bucket, as ``<bucket>/<key>`` paths, sorted."""
        base = f"{self.name}/{prefix}".rstrip("/")
        selector = pafs.FileSelector(base, recursive=True, allow_not_found=True)
        infos = self.server.filesystem().get_file_info(selector)
        return sorted(info.path for info in infos if info.type == pafs.FileType.File)

    def incomplete_uploads(self) -> list[str]:
        """The keys of the multipart uploads begun and never completed nor aborted (S3's
        ``ListMultipartUploads``; the server takes it unsigned)."""
        with urllib.request.urlopen(
            f"{self.server.endpoint}/{self.name}?uploads", timeout=10
        ) as answer:
            document = answer.read().decode()
        return re.findall(r"<Upload>.*?<Key>([^<]*)</Key>", document, flags=re.DOTALL)

    def read(self, path: str) -> bytes:
        """The object at ``<bucket>/<key>`` path ``path``."""
        with self.server.filesystem().open_input_stream(path) as stream:
            return bytes(stream.read())

    def write(self, path: str, data: bytes) -> None:
        """Store ``data`` as the object at ``<bucket>/<key>`` path ``path`` (replacing it)."""
        with self.server.filesystem().open_output_stream(path) as stream:
            stream.write(data)

    def upload(self, folder: Path, prefix: str) -> str:
        """Copy every file under the local ``folder`` to the bucket under ``prefix`` (same
        relative names); returns the URL of the copy, ``s3://<bucket>/<prefix>``."""
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                key = f"{prefix}/{path.relative_to(folder).as_posix()}"
                pafs.copy_files(
                    str(path),
                    f"{self.name}/{key}",
                    source_filesystem=pafs.LocalFileSystem(),
                    destination_filesystem=self.server.filesystem(),
                )
        return f"s3://{self.name}/{prefix}"


def _moto_command(port: int) -> list[str]:
    script = shutil.which("moto_server", path=str(Path(sys.executable).parent))
    if script is not None:
        return [script, "-H", "127.0.0.1", "-p", str(port)]
    return [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)]


def _wait_until_answering(endpoint: str, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"moto_server exited with status {process.returncode}")
        try:
            with urllib.request.urlopen(f"{endpoint}/moto-api/", timeout=1):
                return
        except (urllib.error.URLError, OSError):
            time.sleep(0.1)
    raise RuntimeError(f"moto_server did not answer on {endpoint} within {START_SECONDS} s")


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    """moto's S3-compatible server on 127.0.0.1, for the whole session."""
    port = free_port()
    log = tmp_path_factory.mktemp("moto") / "moto_server.log"
    with log.open("wb") as output:
        process = subprocess.Popen(
            _moto_command(port),
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    endpoint = f"http://127.0.0.1:{port}"
    try:
        _wait_until_answering(endpoint, process)
        yield S3Server(endpoint, log)
    finally:
        stop_group(process, signal.SIGTERM, timeout=10)


def new_bucket(server: S3Server, monkeypatch: pytest.MonkeyPatch) -> S3Bucket:
    """A fresh bucket on ``server``, and the AWS variables that reach it set in this process's
    environment through ``monkeypatch`` (child processes inherit them)."""
    for name, value in server.environment.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_ENDPOINT_URL_S3", raising=False)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    name = f"sluice-{uuid.uuid4().hex[:12]}"
    server.filesystem().create_dir(name)
    return S3Bucket(server, name)


@pytest.fixture
def s3_bucket(s3_server: S3Server, monkeypatch: pytest.MonkeyPatch) -> S3Bucket:
    """A fresh bucket on the session's server, and the AWS variables that reach it set in this
    process's environment (child processes inherit them)."""
    return new_bucket(s3_server, monkeypatch)


@pytest.fixture(scope="module")
def module_s3_bucket(s3_server: S3Server) -> Iterator[S3Bucket]:
    """``s3_bucket`` for the whole test module: the variables stay set until its last test
    ends (a test's own ``s3_bucket`` sets the same values and gives them back)."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        yield new_bucket(s3_server, monkeypatch)


def s3_environment(server: S3Server) -> dict[str, str]:
    """``os.environ`` with the server's AWS variables: for a child process."""
    return {**os.environ, **server.environment}


def sealed_batch(
    folder: Path, *, parts: int = 2, part_bytes: int = 64 * 1024, checkpoint_id: int = 1
) -> Path:
    """A batch sealed on local disk by the real :class:`HandoffWriter` under ``folder``
    (``folder/<pipeline>/<N:08d>/<host>``): ``parts`` parts of about ``part_bytes`` bytes of
    numbered lines of source ``access``. Returns the batch's folder."""
    from pipeline_core.config import SourceConfig, SourceFormat
    from pipeline_core.sinks import Barrier, HandoffWriter
    from pipeline_core.source import Chunk, count_lines
    from pipeline_core.staging_contract import ManifestRange

    source = SourceConfig(name="access", paths=["/logs/access.log"], format=SourceFormat.RAW)
    writer = HandoffWriter(folder, "web", "host-a", [source], max_part_bytes=part_bytes)
    line_bytes = 16
    count = parts * part_bytes // line_bytes
    data = b"".join(f"line {i:09d}\n".encode()[-line_bytes:] for i in range(count))
    chunks = [
        Chunk(
            "access",
            "00000000000000aa",
            start,
            data[start : start + part_bytes // 2],
            count_lines(data[start : start + part_bytes // 2]),
        )
        for start in range(0, len(data), part_bytes // 2)
    ]
    for piece in chunks:  # a part closes past max_part_bytes at the end of an append
        writer.append([piece])
    total = sum(c.lines for c in chunks)
    ranges = (ManifestRange("00000000000000aa", "/logs/access.log", "access", 0, len(data), total),)
    sealed = writer.seal(Barrier(checkpoint_id, datetime.now(timezone.utc), ranges))
    return sealed.staging_path


@dataclass(frozen=True)
class RemoteLine:
    """A line of a recorded batch, read back from the store."""

    fingerprint: str
    offset: int
    data: bytes
    checkpoint_id: int
    host: str


def recorded_remote_lines(metastore_url: str, pipeline: str) -> list[RemoteLine]:
    """Every line of every batch the metastore records for ``pipeline``, read from where it
    records it (an object store URL), sorted by file and offset. Each batch's manifest must
    be stored, and each part must match its CRC-32."""
    import zlib

    from pipeline_core.metastore import Metastore
    from pipeline_core.staging_contract import MANIFEST_NAME, Manifest
    from pipeline_core.storage import StorageLocation

    metastore = Metastore.open(metastore_url, migrate=False)
    try:
        batches = [
            batch
            for checkpoint in metastore.checkpoints(pipeline)
            for batch in metastore.batches(checkpoint.checkpoint_id)
        ]
    finally:
        metastore.close()
    found: list[RemoteLine] = []
    for batch in batches:
        filesystem, root = StorageLocation.parse(batch.staging_path).filesystem()
        with filesystem.open_input_stream(f"{root}/{MANIFEST_NAME}") as stream:
            manifest = Manifest.from_json(json.loads(bytes(stream.read())))
        for part in manifest.parts:
            with filesystem.open_input_stream(f"{root}/{part.name}") as stream:
                data = bytes(stream.read())
            assert f"{zlib.crc32(data):08x}" == part.crc32, f"{root}/{part.name}"
            for segment in part.segments:
                offset = segment.start_offset
                piece = data[segment.part_offset : segment.part_offset + segment.length]
                for line in piece.splitlines(keepends=True):
                    found.append(
                        RemoteLine(
                            segment.file_fingerprint,
                            offset,
                            line.removesuffix(b"\n"),
                            manifest.checkpoint_id,
                            manifest.host,
                        )
                    )
                    offset += len(line)
    return sorted(found, key=lambda line: (line.fingerprint, line.offset))


def manifests_in(bucket: S3Bucket, prefix: str = "staging") -> list[str]:
    """The keys of every batch manifest stored under ``prefix`` (a visible batch each)."""
    return [key for key in bucket.keys(prefix) if key.endswith("/_manifest.json")]
