"""What commands print: checkpoints as text or JSON, progress lines, the pipeline they open."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from pipeline_core.config import PipelineConfig
    from pipeline_core.metastore import MetastoreView
    from pipeline_core.operations import CheckpointInfo, PipelineOperations


def open_operations(config: Path, *, migrate: bool) -> PipelineOperations:
    """The operations on the pipeline of ``config``, its config read and its metastore URL
    checked (``migrate``: see :class:`PipelineOperations`); a command making several calls
    makes them in its ``with`` block, on one metastore.

    Raises:
        ConfigError: the config is invalid, or its metastore URL is unusable.
    """
    from pipeline_core.cli._preflight_services import metastore_url_problem
    from pipeline_core.errors import ConfigError
    from pipeline_core.operations import PipelineOperations

    operations = PipelineOperations(config, migrate=migrate)
    problem = metastore_url_problem(operations.config.metastore_url)
    if problem is not None:
        path = str(operations.config.config_path or config)
        raise ConfigError(path, [f"metastore.url: {problem}"])
    return operations


@contextmanager
def read_only_view(config: Path) -> Iterator[tuple[PipelineConfig, MetastoreView]]:
    """The config of ``config`` and its metastore read through a view, for a command that
    changes nothing: the metastore is neither created nor migrated.

    Raises:
        ConfigError: as :func:`open_operations`.
        MetastoreNotReadyError: the metastore does not exist, or is not migrated.
    """
    with open_operations(config, migrate=False) as pipeline, pipeline.context.view() as view:
        yield pipeline.config, view


def progress(text: str) -> None:
    """A progress line on stderr, with the time: what a long command is doing now."""
    print(f"{time.strftime('%H:%M:%S')} {text}", file=sys.stderr, flush=True)


def warn(text: str) -> None:
    print(f"sluice: warning: {text}", file=sys.stderr, flush=True)


_json_stream: TextIO | None = None
"""Where :func:`print_json` writes while :func:`json_output` holds stdout for it."""


@contextmanager
def json_output(enabled: bool) -> Iterator[None]:
    """While a ``--json`` command runs, stdout is the JSON document's alone: whatever else
    prints there (a library's logging) goes to stderr."""
    global _json_stream
    if not enabled:
        yield
        return
    stdout, _json_stream = sys.stdout, sys.stdout
    sys.stdout = sys.stderr
    try:
        yield
    finally:
        sys.stdout, _json_stream = stdout, None


def print_json(document: Any) -> None:
    print(json.dumps(document, indent=2, default=str), file=_json_stream or sys.stdout)


def checkpoint_line(info: CheckpointInfo, indent: str = "") -> str:
    landing = ""
    if info.landing:
        landed = info.landed
        landing = f", landed {landed.rows or 0} rows + {landed.rejects or 0} rejects"
    batches = ",".join(str(b) for b in info.batch_ids) or "-"
    return (
        f"{indent}checkpoint {info.checkpoint_id} {info.state.value}: {info.line_count} lines, "
        f"{info.byte_count} bytes, batch {batches}{landing}"
        + (f" (run {info.run_id})" if info.run_id else "")
    )


def checkpoint_json(info: CheckpointInfo) -> dict[str, Any]:
    return {
        "checkpoint_id": info.checkpoint_id,
        "state": info.state.value,
        "lines": info.line_count,
        "bytes": info.byte_count,
        "batches": list(info.batch_ids),
        "hosts": list(info.hosts),
        "run_id": info.run_id,
        "requested_at": info.requested_at,
        "sealed_at": info.sealed_at,
        "committed_at": info.committed_at,
        "landing": info.landing or None,
        "error": info.error,
    }
