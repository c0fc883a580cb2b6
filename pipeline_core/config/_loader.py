"""Reading a pipeline config file: YAML -> :class:`PipelineConfig` with paths resolved."""

from __future__ import annotations

import os
import reprlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from pipeline_core.config._model import PipelineConfig, SinkConfig
from pipeline_core.errors import ConfigError

METASTORE_URL_ENV = "SLUICE_METASTORE_URL"


def load_pipeline_config(path: str | Path) -> PipelineConfig:
    """Read, validate and resolve one pipeline config file.

    Relative paths (globs, data/staging/lake folders, a relative SQLite file) resolve against the
    folder of the file. ``$SLUICE_METASTORE_URL`` overrides the metastore URL.

    Raises:
        ConfigError: the file is missing or unreadable, is not YAML, or does not validate; the
            message names the file, each offending key and what was expected.
    """
    file = Path(path).expanduser().resolve()
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(str(file), [f"cannot read the file: {exc}"]) from exc
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(str(file), [f"not valid YAML: {exc}"]) from exc
    if not isinstance(document, dict):
        got = type(document).__name__
        raise ConfigError(str(file), [f"expected a mapping of keys at the top level, got {got}"])
    try:
        config = PipelineConfig.model_validate(document)
    except ValidationError as exc:
        raise ConfigError(str(file), _describe(exc)) from exc
    return _resolve(config, file)


def _describe(error: ValidationError) -> list[str]:
    problems = []
    for item in error.errors():
        key = ".".join(str(part) for part in item["loc"]) or "<top level>"
        message = item["msg"]
        if item["type"] == "extra_forbidden":
            message = "unknown key"
        elif "input" in item and item["type"] != "missing":
            message = f"{message} (got {_short_repr(item['input'])})"
        problems.append(f"{key}: {message}")
    return problems


def _resolve(config: PipelineConfig, file: Path) -> PipelineConfig:
    base = file.parent

    def absolute(value: Path | str) -> Path:
        candidate = Path(os.path.expanduser(str(value)))
        return candidate if candidate.is_absolute() else base / candidate

    data_dir = absolute(config.data_dir)
    sources = [
        source.model_copy(
            update={
                "paths": [str(absolute(p)) for p in source.paths],
                "exclude": [str(absolute(p)) for p in source.exclude],
            }
        )
        for source in config.sources
    ]
    update: dict[str, Any] = {"data_dir": data_dir, "sources": sources, "config_path": file}
    if config.handoff.staging_dir is not None:
        staging = absolute(config.handoff.staging_dir)
        update["handoff"] = config.handoff.model_copy(update={"staging_dir": staging})
    if config.lake.path is not None:
        update["lake"] = config.lake.model_copy(update={"path": absolute(config.lake.path)})
    update["sinks"] = {name: _resolve_sink(sink, absolute) for name, sink in config.sinks.items()}
    url = os.environ.get(METASTORE_URL_ENV) or config.metastore.url
    if url and url.startswith("sqlite:///") and not url.startswith("sqlite:////"):
        url = f"sqlite:///{absolute(url.removeprefix('sqlite:///'))}"
    update["metastore"] = config.metastore.model_copy(update={"url": url})
    return config.model_copy(update=update)


def _resolve_sink(sink: SinkConfig, absolute: Callable[[Path | str], Path]) -> SinkConfig:
    """A sink config with its file paths made absolute."""
    changes: dict[str, Path] = {}
    for key in ("path", "dead_letter"):
        value = getattr(sink, key, None)
        if isinstance(value, Path):
            changes[key] = absolute(value)
    return sink.model_copy(update=changes) if changes else sink


_REPR = reprlib.Repr()
_REPR.maxlevel, _REPR.maxlist, _REPR.maxdict = 3, 6, 6
_REPR.maxstring = _REPR.maxother = 80


def _short_repr(value: object) -> str:
    """The offending value, bounded: a hostile file (nested YAML aliases) can make it huge."""
    return _REPR.repr(value)
