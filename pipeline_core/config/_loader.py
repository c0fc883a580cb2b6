"""Reading a pipeline config file: YAML -> :class:`PipelineConfig` with paths resolved."""

from __future__ import annotations

import os
import reprlib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from pipeline_core._metastore_pooling import METASTORE_POOLING_ENV, MetastorePooling
from pipeline_core.config._interpolation import interpolate
from pipeline_core.config._pipeline import PipelineConfig, SinkConfig
from pipeline_core.config._secrets import MASK, SecretMask, is_credential_header, looks_secret
from pipeline_core.errors import ConfigError

METASTORE_URL_ENV = "SLUICE_METASTORE_URL"


def load_pipeline_config(
    path: str | Path, *, environ: Mapping[str, str] | None = None
) -> PipelineConfig:
    """Read, validate and resolve one pipeline config file.

    ``${VAR}`` and ``${VAR:-default}`` in string values are replaced from ``environ`` (default:
    the process's environment) before validation, ``$$`` by ``$`` (see
    ``pipeline_core.config._interpolation``). Relative paths (globs, data/staging/lake folders,
    a relative SQLite file) resolve against the folder of the file; an ``exclude`` pattern
    without a separator is a file name and stays as written. ``$SLUICE_METASTORE_URL``
    overrides the metastore URL, ``$SLUICE_METASTORE_POOLING`` its ``pooling``. The config's
    :meth:`~PipelineConfig.masked` hides the values of secret variables and URL passwords in
    text about it.

    Raises:
        ConfigError: the file is missing or unreadable, is not YAML, names a variable that is
            not set (and has no default), or does not validate (``$SLUICE_METASTORE_POOLING``
            too); the message names the file, each offending key and what was expected, never
            a secret.
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
    interpolated = interpolate(document, os.environ if environ is None else environ)
    mask = SecretMask.of(interpolated.secret_values)
    if interpolated.problems:
        raise ConfigError(str(file), interpolated.problems)
    try:
        config = PipelineConfig.model_validate(interpolated.document)
    except ValidationError as exc:
        raise ConfigError(str(file), [mask(problem) for problem in _describe(exc, mask)]) from exc
    return _resolve(config, file).with_secrets(mask)


def _describe(error: ValidationError, mask: SecretMask) -> list[str]:
    """One line per problem; the offending values are shown, masked (URL secrets and the values
    of secret variables) before they are cut short and escaped."""
    problems = []
    for item in error.errors():
        key = ".".join(str(part) for part in item["loc"]) or "<top level>"
        message = item["msg"]
        if item["type"] == "extra_forbidden":
            message = "unknown key"
        elif "input" in item and item["type"] != "missing":
            message = f"{message} (got {_short_repr(_masked(item['input'], mask))})"
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
                # Without a separator, a file name wherever it is (as in .gitignore).
                "exclude": [str(absolute(p)) if os.sep in p else p for p in source.exclude],
                "symlink_targets": [str(absolute(p)) for p in source.symlink_targets],
            }
        )
        for source in config.sources
    ]
    update: dict[str, Any] = {"data_dir": data_dir, "sources": sources, "config_path": file}
    handoff: dict[str, Any] = {}
    if config.handoff.staging_dir is not None:
        handoff["staging_dir"] = absolute(config.handoff.staging_dir)
    if config.handoff.staging is not None and "://" not in config.handoff.staging:
        handoff["staging"] = str(absolute(config.handoff.staging))
    if config.handoff.spool_dir is not None:
        handoff["spool_dir"] = absolute(config.handoff.spool_dir)
    if handoff:
        update["handoff"] = config.handoff.model_copy(update=handoff)
    if config.lake.path is not None:
        update["lake"] = config.lake.model_copy(update={"path": absolute(config.lake.path)})
    if config.lake.warehouse is not None and "://" not in config.lake.warehouse:
        update["lake"] = config.lake.model_copy(
            update={"warehouse": str(absolute(config.lake.warehouse))}
        )
    update["sinks"] = {name: _resolve_sink(sink, absolute) for name, sink in config.sinks.items()}
    url = os.environ.get(METASTORE_URL_ENV) or config.metastore.url
    if url and url.startswith("sqlite:///") and not url.startswith("sqlite:////"):
        url = f"sqlite:///{absolute(url.removeprefix('sqlite:///'))}"
    update["metastore"] = config.metastore.model_copy(
        update={"url": url, "pooling": _pooling(config.metastore.pooling, file)}
    )
    return config.model_copy(update=update)


def _pooling(configured: MetastorePooling, file: Path) -> MetastorePooling:
    """``metastore.pooling``, or ``$SLUICE_METASTORE_POOLING`` when it is set."""
    value = os.environ.get(METASTORE_POOLING_ENV)
    if not value:
        return configured
    try:
        return MetastorePooling(value)
    except ValueError:
        choices = ", ".join(pooling.value for pooling in MetastorePooling)
        raise ConfigError(
            str(file), [f"${METASTORE_POOLING_ENV}: expected one of {choices} (got {value!r})"]
        ) from None


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


def _masked(value: object, mask: SecretMask, depth: int = 0) -> object:
    """``value`` with every string in it masked, and the whole value of a key named like a
    secret or a credential header (``password``, ``Authorization``, ``X-Api-Key``), as deep and
    as long as ``_short_repr`` shows it (deeper or later items are never printed, so they are
    left out)."""
    if isinstance(value, str):
        return mask(value)
    if depth > _REPR.maxlevel:
        return ...
    if isinstance(value, dict):
        items = list(value.items())[: _REPR.maxdict + 1]
        return {
            _masked(k, mask, depth + 1): MASK
            if isinstance(k, str) and (looks_secret(k) or is_credential_header(k))
            else _masked(v, mask, depth + 1)
            for k, v in items
        }
    if isinstance(value, list):
        return [_masked(item, mask, depth + 1) for item in value[: _REPR.maxlist + 1]]
    if isinstance(value, tuple):
        return tuple(_masked(item, mask, depth + 1) for item in value[: _REPR.maxtuple + 1])
    return value
