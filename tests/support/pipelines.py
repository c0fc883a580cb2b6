"""Writing pipeline configs for tests (the lines to feed them are in
:mod:`pipeline_core.testing`)."""

from __future__ import annotations

import functools
import os
import shutil
from pathlib import Path
from typing import Any

import yaml

from pipeline_core.config import PipelineConfig, load_pipeline_config


def write_config(
    folder: Path,
    metastore_url: str,
    *,
    name: str = "web_access",
    pattern: str = "logs/access.log*",
    fmt: str = "nginx_combined",
    collector: dict[str, Any] | None = None,
    source: dict[str, Any] | None = None,
    landing_jar: bool = True,
    **extra: Any,
) -> Path:
    """A pipeline config under ``folder`` reading ``folder/<pattern>``; returns its path.

    ``source``: more keys of the one source (``exclude``, ``time_field``...).
    ``landing_jar``: put the jar of the landing's Java functions where a landing looks for it
    (``data_dir/spark``), compiled once per test run: ``javac`` costs seconds of CPU a pipeline.
    """
    document: dict[str, Any] = {
        "name": name,
        "sources": [{"name": "access", "paths": [pattern], "format": fmt, **(source or {})}],
        "data_dir": "data",
        "metastore": {"url": metastore_url},
        "collector": {"host": "test-host", "discovery_interval_s": 0.05, **(collector or {})},
        **extra,
    }
    path = folder / f"{name}.yaml"
    folder.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(document))
    if landing_jar:
        place_landing_jar(folder / document["data_dir"] / "spark")
    return path


def place_landing_jar(folder: Path) -> None:
    """Link the test run's jar of the landing's Java functions into ``folder``, where
    ``java_functions_jar`` then finds it built (no jar without a ``javac``)."""
    jar = _compiled_landing_jar()
    if jar is None or (folder / jar.name).exists():
        return
    folder.mkdir(parents=True, exist_ok=True)
    try:
        os.link(jar, folder / jar.name)
    except OSError:  # another file system
        shutil.copyfile(jar, folder / jar.name)


@functools.cache
def _compiled_landing_jar() -> Path | None:
    from tests.support.jvm import landing_jar

    return landing_jar()


def load(folder: Path, metastore_url: str, **kwargs: Any) -> PipelineConfig:
    return load_pipeline_config(write_config(folder, metastore_url, **kwargs))
