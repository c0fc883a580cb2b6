"""Case 11: sealing into object storage against sealing on local disk.

Sluice: a fresh process collects one nginx log to its end with ``handoff.staging`` on an S3
server on loopback (moto's standalone server, the test suite's): the batch is sealed into the
local spool, uploaded part by part (each part's CRC-32 checked against the manifest's as it is
sent, the stored object read back and checked again), the manifest last, recorded in the
metastore, and the spooled copy deleted: ``Collector.run_once``, timed inside the process.
Baseline: the same collection sealing on local disk (``handoff.staging`` a folder), as case 1.
Figures are input MB per second; the ratio is object storage / local, run by run. The note
gives the upload alone (part bytes over the upload thread's time). A second row is the same
collection with ``handoff.upload_read_back: false`` (no read-back of the stored parts).

moto keeps objects in its own memory and is a single Python process sharing the machine's two
cores with the collector: the figure is a floor for a real store, not a ceiling.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import urllib.request
import uuid
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import Any

import yaml

from bench import common
from bench.common import Context, Row, Stat, paired_ratio

MiB = common.MiB
FULL_BYTES = 256 * MiB
QUICK_BYTES = 32 * MiB
S3_ENV = {
    "AWS_ACCESS_KEY_ID": "bench",
    "AWS_SECRET_ACCESS_KEY": "bench",
    "AWS_REGION": "us-east-1",
    "AWS_EC2_METADATA_DISABLED": "true",
}


def run(ctx: Context) -> list[Row]:
    size = QUICK_BYTES if ctx.quick else FULL_BYTES
    source = common.big_log(size)
    megabytes = common.size_of(source) / 1e6
    local_s: list[float] = []
    remote_s: list[float] = []
    upload_mb_s: list[float] = []
    unchecked_s: list[float] = []
    with moto_server(ctx.work("moto")) as endpoint:
        for run_number in range(ctx.sizes.runs):
            common.warm(source)
            local = collect(ctx.work("local"), source, staging=None, endpoint=endpoint)
            local_s.append(local["seconds"])
            bucket = f"bench-{uuid.uuid4().hex[:8]}-{run_number}"
            create_bucket(endpoint, bucket)
            common.warm(source)
            remote = collect(
                ctx.work("remote"), source, staging=f"s3://{bucket}/staging", endpoint=endpoint
            )
            remote_s.append(remote["seconds"])
            upload_mb_s.append(remote["uploaded_bytes"] / 1e6 / max(remote["upload_seconds"], 1e-9))
            common.warm(source)
            unchecked = collect(
                ctx.work("remote"),
                source,
                staging=f"s3://{bucket}/unchecked",
                endpoint=endpoint,
                read_back=False,
            )
            unchecked_s.append(unchecked["seconds"])
    ctx.work("local")
    ctx.work("remote")
    sluice = Stat([megabytes / s for s in remote_s], "MB/s")
    baseline = Stat([megabytes / s for s in local_s], "MB/s")
    ratio = paired_ratio(sluice.values, baseline.values)
    upload = Stat(upload_mb_s, "MB/s")
    no_read_back = Stat([megabytes / s for s in unchecked_s], "MB/s")
    return [
        Row(
            case="11",
            measure=f"collector 1 x {size // MiB} MiB -> sealed + uploaded to S3 (loopback moto)",
            sluice=sluice,
            baseline=baseline,
            baseline_name="sealed on local disk",
            ratio=ratio,
            target="",
            met=None,
            note=f"upload alone {upload.text()} (parts sent, CRC-checked, read back)",
            details={
                "mb": megabytes,
                "remote_s": remote_s,
                "local_s": local_s,
                "upload_mb_s": upload_mb_s,
            },
        ),
        Row(
            case="11",
            measure="the same, handoff.upload_read_back: false",
            sluice=no_read_back,
            baseline=baseline,
            baseline_name="sealed on local disk",
            ratio=paired_ratio(no_read_back.values, baseline.values),
            note="parts CRC-checked as sent and their stored size checked; not read back",
            details={"remote_s": unchecked_s},
        ),
    ]


def collect(
    work: Path, source: Path, *, staging: str | None, endpoint: str, read_back: bool = True
) -> dict[str, Any]:
    """One collection of ``source`` in a fresh process, staging in ``staging`` (an object
    store URL) or on local disk (None)."""
    config = common.pipeline_config(work, source)
    if staging is not None:
        document = yaml.safe_load(config.read_text())
        document["handoff"] = {"staging": staging, "upload_read_back": read_back}
        config.write_text(yaml.safe_dump(document))
    saved = {name: os.environ.get(name) for name in [*S3_ENV, "AWS_ENDPOINT_URL"]}
    os.environ.update({**S3_ENV, "AWS_ENDPOINT_URL": endpoint})
    try:
        return common.run_child("bench.cases.upload", str(config))
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@contextmanager
def moto_server(work: Path) -> Any:
    """moto's S3 server on a free loopback port, in a process group of its own."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with open(work / "moto.log", "wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    endpoint = f"http://127.0.0.1:{port}"
    try:
        common.wait_for(lambda: _answers(endpoint), 60, "moto_server")
        yield endpoint
    finally:
        process.terminate()
        process.wait(timeout=30)


def _answers(endpoint: str) -> bool:
    try:
        with urllib.request.urlopen(f"{endpoint}/moto-api/", timeout=1):
            return True
    except OSError:
        return False


def create_bucket(endpoint: str, bucket: str) -> None:
    import pyarrow.fs as pafs

    filesystem = pafs.S3FileSystem(
        access_key="bench",
        secret_key="bench",
        region="us-east-1",
        endpoint_override=endpoint.removeprefix("http://"),
        scheme="http",
        allow_bucket_creation=True,
    )
    filesystem.create_dir(bucket)


def main() -> None:
    """Child: collect once with the config given; print the run and its uploads as JSON."""
    from pipeline_core.collector import _uploads

    parser = argparse.ArgumentParser()
    parser.add_argument("config", type=Path)
    args = parser.parse_args()
    totals = {"uploaded_bytes": 0, "upload_seconds": 0.0}
    stats = _uploads.UploadWorker.stats

    def stop(self: _uploads.UploadWorker, timeout: float = 30.0) -> None:
        snapshot = stats(self)
        totals["uploaded_bytes"] += snapshot.uploaded_bytes
        totals["upload_seconds"] += snapshot.seconds
        original_stop(self, timeout)

    original_stop = _uploads.UploadWorker.stop
    _uploads.UploadWorker.stop = stop  # type: ignore[method-assign]
    started = time.perf_counter()
    collected = common.collect_once(args.config)
    print(json.dumps({**asdict(collected), **totals, "wall": time.perf_counter() - started}))


if __name__ == "__main__":
    main()
