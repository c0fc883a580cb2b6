"""The landing job's entry point: spark-submit of the file, and the archive it is shipped in."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline_core.landing import spark_jobs_archive
from tests.spark_jobs.support import LINES_PER_HOST, stage

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_spark_submit_lands_a_checkpoint(tmp_path: Path) -> None:
    staged = stage(tmp_path / "staging", 11)
    lake = tmp_path / "lake"
    spark_submit = Path(sys.executable).parent / "spark-submit"
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    command = [
        str(spark_submit), "--master", "local[2]",
        "--conf", "spark.ui.enabled=false",
        "--conf", "spark.driver.host=127.0.0.1",
        "--conf", "spark.driver.bindAddress=127.0.0.1",
        "spark_jobs/land_checkpoint.py",
        "--checkpoint-dir", str(staged), "--lake", str(lake),
    ]  # fmt: skip

    done = subprocess.run(
        command, cwd=REPO, env=env, capture_output=True, text=True, timeout=240, check=False
    )

    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    assert summary == json.loads((lake / "_landings" / "checkpoint_id=11.json").read_text())
    assert summary["input_lines"] == 2 * LINES_PER_HOST
    assert sum(summary["rows"].values()) + sum(summary["rejects"].values()) == 2 * LINES_PER_HOST
    files = list((lake / "access").glob("event_date=*/checkpoint_id=11/*.parquet"))
    assert sum(pq.read_metadata(path).num_rows for path in files) == summary["rows"]["access"]
    assert pq.read_schema(files[0]).field("event_time").type == pa.timestamp("us", tz="UTC")


def imported_from(path: Path, code: str) -> list[tuple[str, str]]:
    """Run ``code`` in a fresh interpreter with ``path`` first on its import path; the modules
    of Sluice it imported, each with the file it came from."""
    script = (
        f"import sys\nsys.path.insert(0, {str(path)!r})\n{code}\n"
        "import json\n"
        "print(json.dumps(sorted((name, getattr(module, '__file__', '') or '')"
        " for name, module in sys.modules.items()"
        " if name.split('.')[0] in ('pipeline_core', 'spark_jobs'))))"
    )
    done = subprocess.run(
        [sys.executable, "-I", "-c", script],
        cwd=path.parent,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return [(name, file) for name, file in json.loads(done.stdout.strip().splitlines()[-1])]


def test_the_shipped_archive_holds_everything_the_job_imports_of_sluice(tmp_path: Path) -> None:
    archive = spark_jobs_archive(tmp_path)

    modules = imported_from(archive, "import spark_jobs.land_checkpoint")

    assert {name for name, _ in modules} >= {
        "spark_jobs.land_checkpoint",
        "spark_jobs.landing",
        "pipeline_core.staging_contract",
    }
    assert {name for name, _ in modules if name.startswith("pipeline_core")} == {
        "pipeline_core",
        "pipeline_core.errors",
        "pipeline_core.staging_contract",
        "pipeline_core.staging_contract._fields",
        "pipeline_core.staging_contract._layout",
        "pipeline_core.staging_contract._manifest",
        "pipeline_core.staging_contract._segment",
    }
    assert [name for name, file in modules if not file.startswith(str(archive))] == []


def test_the_executors_module_imports_nothing_of_pipeline_core() -> None:
    modules = imported_from(REPO, "import spark_jobs.staging")

    assert [name for name, _ in modules] == ["spark_jobs", "spark_jobs.staging"]
