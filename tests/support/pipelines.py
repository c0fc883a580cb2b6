"""Writing pipeline configs and log files for tests."""

from __future__ import annotations

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
    **extra: Any,
) -> Path:
    """A pipeline config under ``folder`` reading ``folder/<pattern>``; returns its path.

    ``source``: more keys of the one source (``exclude``, ``time_field``...)."""
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
    return path


def load(folder: Path, metastore_url: str, **kwargs: Any) -> PipelineConfig:
    return load_pipeline_config(write_config(folder, metastore_url, **kwargs))


def lines(prefix: str, count: int) -> list[bytes]:
    """``count`` distinct lines (no newline) starting with ``prefix``."""
    return [f"{prefix} line {i:05d}".encode() for i in range(count)]


def append(path: Path, *lines: bytes, newline: bool = True) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "ab") as handle:
        handle.write(b"".join(line + (b"\n" if newline else b"") for line in lines))
