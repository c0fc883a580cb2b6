"""Which pipelines there are: the config files the DAG factory turns into ``sluice_<name>``."""

from __future__ import annotations

import os
import re
from pathlib import Path

import yaml

PIPELINES_DIR_ENV = "SLUICE_PIPELINES_DIR"
DEFAULT_PIPELINES_DIR = Path(__file__).resolve().parents[2] / "pipelines"
DAG_ID_PREFIX = "sluice_"
"""A pipeline's DAG is ``sluice_<name>`` (see ``sluice_airflow.dag_factory``)."""
PIPELINE_NAME = re.compile(r"[a-z][a-z0-9_]{0,62}")


def pipelines_dir() -> Path:
    """The folder of pipeline configs: ``$SLUICE_PIPELINES_DIR`` or ``<repo>/pipelines``."""
    configured = os.environ.get(PIPELINES_DIR_ENV)
    return Path(configured) if configured else DEFAULT_PIPELINES_DIR


def pipeline_configs(folder: Path | None = None) -> list[Path]:
    """The config files of ``folder`` (default :func:`pipelines_dir`) that the DAG factory turns
    into DAGs: ``*.yaml`` named like a pipeline, sorted by name."""
    folder = pipelines_dir() if folder is None else folder
    if not folder.is_dir():
        return []
    return [
        path
        for path in sorted(folder.glob("*.yaml"))
        if path.is_file() and PIPELINE_NAME.fullmatch(path.stem)
    ]


def pipeline_name(config_path: Path) -> str:
    """The ``name`` a config file declares, or its file name when it cannot be read (as the
    DAG factory does, so the name always matches the DAG id)."""
    try:
        document = yaml.safe_load(config_path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return config_path.stem
    name = document.get("name") if isinstance(document, dict) else None
    return name if isinstance(name, str) and PIPELINE_NAME.fullmatch(name) else config_path.stem


def find_pipeline(name: str, folder: Path | None = None) -> Path | None:
    """The config file of pipeline ``name``, or None."""
    return next((p for p in pipeline_configs(folder) if pipeline_name(p) == name), None)
