"""What a spark-submit of ``spark_jobs/land.py`` needs for the checkpoints of one landing.

The Airflow DAG's ``LandCheckpointOperator`` and ``sluice land`` both submit exactly this spec,
through the Spark provider's ``SparkSubmitHook`` (:meth:`SparkJobSpec.hook_arguments`,
:func:`spark_submit_binary`). With staging in an object store, the job reads each checkpoint
from its URL there (``PipelineConfig.staging_area``); the store's endpoint and credentials reach
spark-submit through its inherited environment, never its command line or the spec.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline_core._landing_mode import LandingMode
from pipeline_core._metastore_pooling import METASTORE_POOLING_ENV
from pipeline_core.config import PipelineConfig
from pipeline_core.landing._jar import java_functions_jar
from pipeline_core.staging_contract import LAKE_SQL_CONF

LANDING_APPLICATION = Path(__file__).resolve().parents[2] / "spark_jobs" / "land.py"
METASTORE_URL_ENV = "SLUICE_METASTORE_URL"
"""The landing job's driver reads the metastore URL (the lake catalog's database) from here."""
SHIPPED_CORE_FILES = (
    "__init__.py",
    "_compat.py",
    "_landing_mode.py",
    "_metastore_pooling.py",
    "errors.py",
    "staging_contract/*.py",
    "lake/*.py",
    "formats/*.py",
    "storage/*.py",
)
"""The files of ``pipeline_core`` (globs) that ``spark_jobs`` imports, standard library and
pyarrow only: the archive for ``--py-files`` holds them beside ``spark_jobs``."""


@dataclass(frozen=True)
class SparkJobSpec:
    """Everything a spark-submit of the landing job needs."""

    application: str
    application_args: list[str]
    name: str
    conf: dict[str, str]
    env_vars: dict[str, str]
    py_files: str | None
    jars: str | None = None
    """The jar of the landing's Java functions (``java_functions_jar``); ``None`` without a
    JDK."""

    def hook_arguments(self) -> dict[str, Any]:
        """The job as keyword arguments of the Spark provider's ``SparkSubmitHook`` (the
        application itself is ``submit``'s argument)."""
        return {
            "conf": dict(self.conf),
            "name": self.name,
            "application_args": list(self.application_args),
            "env_vars": dict(self.env_vars),
            "py_files": self.py_files,
            "jars": self.jars,
        }


def spark_submit_binary() -> str | None:
    """The spark-submit to run: ``None`` (the provider's default, ``spark-submit`` on
    ``PATH``) when there is one on ``PATH``, else the one beside the running Python (the
    virtualenv's pyspark) when it exists."""
    if shutil.which("spark-submit"):
        return None
    beside_python = Path(sys.executable).parent / "spark-submit"
    return str(beside_python) if os.access(beside_python, os.X_OK) else None


@dataclass(frozen=True)
class LandingInput:
    """A checkpoint to land and the hosts whose batches the metastore recorded for it (the
    job lands only those folders)."""

    checkpoint_id: int
    hosts: tuple[str, ...] | None = None


def landing_job_spec(
    config: PipelineConfig,
    checkpoints: Sequence[LandingInput],
    landing_id: str,
    mode: LandingMode = LandingMode.APPEND,
    *,
    write_archive: bool = True,
) -> SparkJobSpec:
    """The spec of one job landing every checkpoint of ``checkpoints`` (one commit per table).

    ``write_archive``: False names the ``--py-files`` archive and the ``--jars`` jar without
    writing them (a plan).

    :raises ValueError: ``checkpoints`` is empty.
    """
    if not checkpoints:
        raise ValueError("a landing job needs at least one checkpoint")
    arguments: list[str] = []
    for item in checkpoints:
        folder, mark, options = config.staging_area.where(item.checkpoint_id).partition("?")
        hosts = "" if item.hosts is None else "=" + ",".join(sorted(item.hosts))
        arguments += ["--checkpoint", folder + hosts + mark + options]
    ids = [item.checkpoint_id for item in checkpoints]
    jar = java_functions_jar(config.data_dir / "spark", write=write_archive)
    span = f"{ids[0]}" if len(ids) == 1 else f"{min(ids)}-{max(ids)}"
    return SparkJobSpec(
        application=str(LANDING_APPLICATION),
        application_args=[
            *arguments,
            "--lake",
            str(config.lake_warehouse),
            "--namespace",
            config.lake_namespace,
            "--landing-id",
            landing_id,
            "--mode",
            mode.value,
        ],
        name=f"sluice-land-{config.name}-{span}",
        conf={
            **LAKE_SQL_CONF,
            "spark.ui.enabled": "false",
            "spark.ui.showConsoleProgress": "false",
        },
        env_vars={
            "PYSPARK_PYTHON": sys.executable,
            "PYSPARK_DRIVER_PYTHON": sys.executable,
            METASTORE_URL_ENV: config.metastore_url,
            METASTORE_POOLING_ENV: config.metastore.pooling.value,
        },
        py_files=str(spark_jobs_archive(config.data_dir / "spark", write=write_archive)),
        jars=None if jar is None else str(jar),
    )


def spark_jobs_archive(folder: Path, *, write: bool = True) -> Path:
    """A zip of the ``spark_jobs`` package for ``--py-files``, with the ``SHIPPED_CORE_FILES``
    it imports: executors on other machines import ``spark_jobs.staging`` (chunks are split into
    lines there), a driver on the cluster the whole job. Named by the hash of its content, so it
    is written once per version of the job (``write``: False only names it)."""
    root = LANDING_APPLICATION.parents[1]
    files = [*(root / "spark_jobs").glob("**/*.py")]
    files += [
        path for pattern in SHIPPED_CORE_FILES for path in (root / "pipeline_core").glob(pattern)
    ]
    sources = {path.relative_to(root).as_posix(): path for path in sorted(files)}
    digest = hashlib.sha256()
    for name, source in sources.items():
        digest.update(name.encode())
        digest.update(source.read_bytes())
    archive = folder / f"spark_jobs-{digest.hexdigest()[:16]}.zip"
    if write and not archive.exists():
        folder.mkdir(parents=True, exist_ok=True)
        temporary = archive.with_suffix(".tmp")
        with zipfile.ZipFile(temporary, "w", zipfile.ZIP_DEFLATED) as zipped:
            for name, source in sources.items():
                zipped.write(source, name)
        os.replace(temporary, archive)
    return archive
