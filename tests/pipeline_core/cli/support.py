"""Running the real ``sluice`` command in a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from pipeline_core.config import METASTORE_URL_ENV

REPO = Path(__file__).resolve().parents[3]


def sluice_env(**changes: str) -> dict[str, str]:
    """This process's environment without ``SLUICE_METASTORE_URL``, with ``changes``."""
    env = {k: v for k, v in os.environ.items() if k != METASTORE_URL_ENV}
    env.update(changes)
    return env


def sluice(*args: str, timeout: float = 120, **changes: str) -> subprocess.CompletedProcess[str]:
    """``python -m pipeline_core ARGS`` run to its end."""
    return subprocess.run(
        [sys.executable, "-m", "pipeline_core", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=REPO,
        env=sluice_env(**changes),
        check=False,
    )


def start_sluice(*args: str, **kwargs: Any) -> subprocess.Popen[str]:
    """``python -m pipeline_core ARGS`` started, its stdout and stderr piped."""
    return subprocess.Popen(
        [sys.executable, "-m", "pipeline_core", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env=kwargs.pop("env", sluice_env()),
        **kwargs,
    )


def upgraded(config: Path) -> Path:
    """``config`` after ``sluice db upgrade`` created its metastore."""
    from pipeline_core.cli import main

    assert main(["db", "upgrade", str(config)]) == 0
    return config


def no_traceback(stderr: str) -> None:
    assert "Traceback" not in stderr, stderr
