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

from pipeline_core.config import PipelineConfig
from pipeline_core.errors import LandingError
from pipeline_core.sinks import checkpoint_dir

LANDING_APPLICATION = Path(__file__).resolve().parents[2] / "spark_jobs" / "land_checkpoint.py"


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
            "spark.sql.session.timeZone": "UTC",
            "spark.sql.sources.partitionOverwriteMode": "dynamic",
            "spark.ui.enabled": "false",
            "spark.ui.showConsoleProgress": "false",
        },
        env_vars={"PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable},
        py_files=str(spark_jobs_archive(config.data_dir / "spark")),
    )


def spark_jobs_archive(folder: Path) -> Path:
    """A zip of the ``spark_jobs`` package for ``--py-files``: executors on other machines
    import ``spark_jobs.staging`` (chunks are split into lines there). Named by the hash of its
    content, so it is written once per version of the job."""
    package = LANDING_APPLICATION.parent
    sources = sorted(package.glob("*.py"))
    digest = hashlib.sha256()
    for source in sources:
        digest.update(source.name.encode())
        digest.update(source.read_bytes())
    archive = folder / f"spark_jobs-{digest.hexdigest()[:16]}.zip"
    if not archive.exists():
        folder.mkdir(parents=True, exist_ok=True)
        temporary = archive.with_suffix(".tmp")
        with zipfile.ZipFile(temporary, "w", zipfile.ZIP_DEFLATED) as zipped:
            for source in sources:
                zipped.write(source, f"spark_jobs/{source.name}")
        os.replace(temporary, archive)
    return archive


def landing_summary_path(config: PipelineConfig, checkpoint_id: int) -> Path:
    return config.lake_dir / "_landings" / f"checkpoint_id={checkpoint_id}.json"


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
