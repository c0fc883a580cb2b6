"""What a spark-submit of ``spark_jobs/land_checkpoint.py`` needs for one checkpoint.

The Airflow DAG (through the provider's ``SparkSubmitOperator``) and ``sluice land`` (through the
provider's ``SparkSubmitHook``) both submit exactly this spec.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline_core import staging_contract
from pipeline_core.config import PipelineConfig
from pipeline_core.errors import LandingError
from pipeline_core.staging_contract import LAKE_SQL_CONF, checkpoint_dir

LANDING_APPLICATION = Path(__file__).resolve().parents[2] / "spark_jobs" / "land_checkpoint.py"
SHIPPED_CORE_FILES = ("__init__.py", "errors.py", "staging_contract/*.py")
"""The files of ``pipeline_core`` (globs) that ``spark_jobs`` imports, all standard library only:
the archive for ``--py-files`` holds them beside ``spark_jobs``."""


@dataclass(frozen=True)
class SparkJobSpec:
    """Everything a spark-submit of the landing job for one checkpoint needs."""

    application: str
    application_args: list[str]
    name: str
    conf: dict[str, str]
    env_vars: dict[str, str]
    py_files: str | None


def landing_job_spec(
    config: PipelineConfig, checkpoint_id: int, hosts: Sequence[str] | None = None
) -> SparkJobSpec:
    """``hosts``: the hosts whose batches the metastore recorded for the checkpoint; the job
    lands only those folders."""
    host_args = ["--hosts", ",".join(sorted(hosts))] if hosts is not None else []
    return SparkJobSpec(
        application=str(LANDING_APPLICATION),
        application_args=[
            "--checkpoint-dir",
            str(checkpoint_dir(config.staging_dir, config.name, checkpoint_id)),
            "--lake",
            str(config.lake_dir),
            *host_args,
        ],
        name=f"sluice-land-{config.name}-{checkpoint_id}",
        conf={
            **LAKE_SQL_CONF,
            "spark.ui.enabled": "false",
            "spark.ui.showConsoleProgress": "false",
        },
        env_vars={"PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable},
        py_files=str(spark_jobs_archive(config.data_dir / "spark")),
    )


def spark_jobs_archive(folder: Path) -> Path:
    """A zip of the ``spark_jobs`` package for ``--py-files``, with the ``SHIPPED_CORE_FILES``
    it imports: executors on other machines import ``spark_jobs.staging`` (chunks are split into
    lines there), a driver on the cluster the whole job. Named by the hash of its content, so it
    is written once per version of the job."""
    root = LANDING_APPLICATION.parents[1]
    files = [*(root / "spark_jobs").glob("*.py")]
    files += [
        path for pattern in SHIPPED_CORE_FILES for path in (root / "pipeline_core").glob(pattern)
    ]
    sources = {path.relative_to(root).as_posix(): path for path in sorted(files)}
    digest = hashlib.sha256()
    for name, source in sources.items():
        digest.update(name.encode())
        digest.update(source.read_bytes())
    archive = folder / f"spark_jobs-{digest.hexdigest()[:16]}.zip"
    if not archive.exists():
        folder.mkdir(parents=True, exist_ok=True)
        temporary = archive.with_suffix(".tmp")
        with zipfile.ZipFile(temporary, "w", zipfile.ZIP_DEFLATED) as zipped:
            for name, source in sources.items():
                zipped.write(source, name)
        os.replace(temporary, archive)
    return archive


def landing_summary_path(config: PipelineConfig, checkpoint_id: int) -> Path:
    """Where the landing job writes the summary of a checkpoint of ``config``'s pipeline."""
    return staging_contract.landing_summary_path(config.lake_dir, checkpoint_id)


def read_landing_summary(config: PipelineConfig, checkpoint_id: int) -> dict[str, Any]:
    """The counts the landing job wrote for a checkpoint.

    Raises:
        LandingError: the job has not written them (it did not run or did not finish).
    """
    path = landing_summary_path(config, checkpoint_id)
    try:
        summary: dict[str, Any] = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise LandingError(
            f"checkpoint {checkpoint_id} has no landing summary at {path}: "
            "the Spark job did not land it"
        ) from exc
    return summary
