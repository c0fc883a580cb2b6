"""The config files a running collector could not serve, for ``sluice status`` and the state
page: ``<data_dir>/collector/config_problems.json`` under each served pipeline's data directory.

The file is rewritten whenever the problems change and at least every
``CONFIG_PROBLEMS_REFRESH_S`` seconds while the collector runs (a reader trusts it only while
fresh), and removed when the collector stops. Its content::

    {"source": "/etc/sluice/pipelines", "written_at": 1767000000.0,
     "problems": [{"path": "/etc/sluice/pipelines/broken.yaml", "error": "invalid pipeline ...",
                   "since": 1766999990.0, "pipeline": null}]}

``pipeline`` names the pipeline a file defined before it broke, which keeps running on its
previous config; null for a file that never started a pipeline.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from pipeline_core._file_modes import make_private_dirs, write_private_file

log = logging.getLogger(__name__)

CONFIG_PROBLEMS_FILE = "config_problems.json"
CONFIG_PROBLEMS_REFRESH_S = 10.0


@dataclass(frozen=True)
class ConfigProblem:
    """A config file of the collector's folder that it does not serve as written."""

    path: str
    error: str
    """The config error, on one line (it names the file and the key; secrets hidden)."""
    since: float
    """When the file was first seen in this state (seconds since the epoch)."""
    pipeline: str | None = None
    """The pipeline the file defined before, still served on its previous config; None when
    the file serves nothing."""


def config_problems_file(data_dir: Path) -> Path:
    return data_dir / "collector" / CONFIG_PROBLEMS_FILE


def write_config_problems(
    data_dirs: Iterable[Path], source: Path, problems: Iterable[ConfigProblem]
) -> None:
    """Write the problems into each data directory's file (atomically; a failure is logged)."""
    document = json.dumps(
        {
            "source": str(source),
            "written_at": time.time(),
            "problems": [asdict(problem) for problem in problems],
        }
    )
    for data_dir in set(data_dirs):
        path = config_problems_file(data_dir)
        try:
            make_private_dirs(path.parent)
            temporary = path.with_suffix(".json.tmp")
            write_private_file(temporary, document.encode())
            os.replace(temporary, path)
        except OSError as exc:
            log.warning("cannot write %s: %s", path, exc)


def remove_config_problems(data_dirs: Iterable[Path]) -> None:
    for data_dir in set(data_dirs):
        try:
            config_problems_file(data_dir).unlink(missing_ok=True)
        except OSError as exc:
            log.warning("cannot remove %s: %s", config_problems_file(data_dir), exc)


def read_config_problems(data_dir: Path, max_age: float = 60.0) -> list[ConfigProblem] | None:
    """The problems a running collector reported under ``data_dir`` in the last ``max_age``
    seconds; None when none did (no collector, or it stopped)."""
    path = config_problems_file(data_dir)
    try:
        document: dict[str, Any] = json.loads(path.read_text())
        if time.time() - float(document["written_at"]) > max_age:
            return None
        return [ConfigProblem(**item) for item in document["problems"]]
    except (OSError, ValueError, KeyError, TypeError):
        return None
