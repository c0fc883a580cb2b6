"""``build_sink``: the sink a sink config describes."""

from __future__ import annotations

from pathlib import Path

from pipeline_core.config._sinks import (
    FileSinkConfig,
    HttpSinkConfig,
    NullSinkConfig,
    SqlSinkConfig,
    StdoutSinkConfig,
)
from pipeline_core.sinks._file import RollingFileSink
from pipeline_core.sinks._http import HttpSink
from pipeline_core.sinks._retry import RetryPolicy
from pipeline_core.sinks._sink import Sink
from pipeline_core.sinks._sql import SqlSink
from pipeline_core.sinks._trial import NullSink, StdoutSink


def build_sink(
    name: str,
    config: HttpSinkConfig | SqlSinkConfig | FileSinkConfig | NullSinkConfig | StdoutSinkConfig,
    *,
    data_dir: Path,
) -> Sink:
    """A new, unstarted sink named ``name`` for ``config``.

    Paths in ``config`` are used as given (the loader has made them absolute). An HTTP sink
    whose config omits ``dead_letter`` writes refused lines to
    ``<data_dir>/dead_letter/<name>.jsonl``; ``dead_letter: null`` means no dead-letter file.

    Raises:
        TypeError: ``config`` is not a sink config this function knows.
    """
    match config:
        case HttpSinkConfig():
            return HttpSink(
                name,
                config.url,
                format=config.format,
                gzip=config.gzip,
                headers=dict(config.headers),
                timeout_s=config.timeout_s,
                deadline_s=config.deadline_s,
                max_request_bytes=config.max_request_bytes,
                dead_letter=_dead_letter(name, config, data_dir),
                retry=RetryPolicy(max_attempts=config.max_attempts),
            )
        case SqlSinkConfig():
            return SqlSink(
                name,
                config.url,
                table=config.table,
                retry=RetryPolicy(max_attempts=config.max_attempts),
            )
        case FileSinkConfig():
            return RollingFileSink(
                name, config.path, max_bytes=config.max_bytes, backups=config.backups
            )
        case NullSinkConfig():
            return NullSink(name)
        case StdoutSinkConfig():
            return StdoutSink(name)
        case _:
            raise TypeError(f"sink {name!r}: no sink is built from {type(config).__name__}")


def _dead_letter(name: str, config: HttpSinkConfig, data_dir: Path) -> Path | None:
    if "dead_letter" in config.model_fields_set:
        return config.dead_letter
    return data_dir / "dead_letter" / f"{name}.jsonl"
