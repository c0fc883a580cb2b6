"""The pipeline configs a collector serves: a file or a folder of ``*.yaml``, and its changes."""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from pipeline_core.config import PipelineConfig, load_pipeline_config
from pipeline_core.errors import ConfigError

log = logging.getLogger(__name__)


class ConfigChange(Enum):
    ADDED = "added"
    CHANGED = "changed"
    REMOVED = "removed"


@dataclass(frozen=True)
class ConfigEvent:
    change: ConfigChange
    name: str
    """The pipeline's name."""
    config: PipelineConfig | None
    """The new config (None for REMOVED)."""


class ConfigSource:
    """Reads the pipeline configs of ``path`` (one YAML file, or every ``*.yaml`` of a folder)
    and tells, on each :meth:`changes`, which pipelines were added, changed or removed.

    A file whose content did not change is not read again. A changed file that no longer
    validates is reported in the log and ignored: its pipeline keeps running on the config it
    had (a typo must not stop collection). Two files naming one pipeline: the first by file
    name wins, the other is reported.
    """

    def __init__(self, path: Path) -> None:
        self._path = path
        self._digests: dict[Path, bytes] = {}
        self._configs: dict[str, tuple[Path, PipelineConfig]] = {}

    def load(self) -> list[PipelineConfig]:
        """Every config now; any invalid one raises ``ConfigError`` (nothing starts half-way)."""
        files = self._files()
        if not files:
            raise ConfigError(str(self._path), ["no pipeline config (*.yaml) found"])
        configs = [load_pipeline_config(file) for file in files]
        names: dict[str, Path] = {}
        for file, config in zip(files, configs, strict=True):
            if config.name in names:
                raise ConfigError(
                    str(file),
                    [f"name: pipeline {config.name!r} is also defined in {names[config.name]}"],
                )
            names[config.name] = file
            self._digests[file] = _digest(file)
            self._configs[config.name] = (file, config)
        return configs

    def changes(self) -> list[ConfigEvent]:
        events: list[ConfigEvent] = []
        files = self._files()
        seen: set[str] = set()
        for file in files:
            try:
                digest = _digest(file)
            except OSError as exc:
                log.warning("cannot read %s: %s", file, exc)
                continue
            known = next((n for n, (f, _) in self._configs.items() if f == file), None)
            if known is not None and self._digests.get(file) == digest:
                seen.add(known)
                continue
            try:
                config = load_pipeline_config(file)
            except ConfigError as exc:
                log.error("%s; the pipeline keeps its previous config", exc)
                if known is not None:
                    seen.add(known)
                continue
            self._digests[file] = digest
            if config.name in seen:
                log.error("%s: pipeline %r is defined twice; ignored", file, config.name)
                continue
            seen.add(config.name)
            if known is not None and known != config.name:
                events.append(ConfigEvent(ConfigChange.REMOVED, known, None))
                del self._configs[known]
            change = ConfigChange.CHANGED if config.name in self._configs else ConfigChange.ADDED
            self._configs[config.name] = (file, config)
            events.append(ConfigEvent(change, config.name, config))
        for name in [n for n in self._configs if n not in seen]:
            file, _ = self._configs.pop(name)
            self._digests.pop(file, None)
            events.append(ConfigEvent(ConfigChange.REMOVED, name, None))
        return events

    def _files(self) -> list[Path]:
        if self._path.is_dir():
            return sorted(p for p in self._path.glob("*.yaml") if p.is_file())
        return [self._path] if self._path.exists() else []


def _digest(file: Path) -> bytes:
    return hashlib.sha256(file.read_bytes()).digest()
