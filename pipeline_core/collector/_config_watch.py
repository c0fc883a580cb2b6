"""The pipeline configs a collector serves: a file or a folder of ``*.yaml``, and its changes."""

from __future__ import annotations

import hashlib
import logging
import time
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from pipeline_core.collector._config_problems import ConfigProblem
from pipeline_core.config import PipelineConfig, load_pipeline_config
from pipeline_core.errors import ConfigError

log = logging.getLogger(__name__)

RACY_SECONDS = 2.0
"""A config file modified less long ago is read again at each look even if its status is the
same: two writes within the file system's time granularity can leave the same status."""


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

    A file whose content did not change is not parsed again, nor read again while its status
    (inode, size, modification and change times) is the same and older than
    :data:`RACY_SECONDS` (a file written twice within the file system's time granularity, at
    the same size, is read again until it is older). In a folder, a file that is not
    valid (not YAML, an unknown key, an unset variable...) is isolated: it is reported once in
    the log and in :attr:`problems`, and skipped while the others are served; once fixed, it is
    read again at the next :meth:`changes` and its pipeline starts. A changed file that no
    longer validates leaves its pipeline running on the config it had (a typo must not stop
    collection). Two files naming one pipeline: the first by file name wins, the other is
    reported.
    """

    def __init__(self, path: Path) -> None:
        self._path = path
        self._digests: dict[Path, bytes] = {}
        self._read_as: dict[Path, tuple[tuple[int, int, int, int], bytes]] = {}
        """A file's status when it was last read, and its digest then."""
        self._configs: dict[str, tuple[Path, PipelineConfig]] = {}
        self._problems: dict[Path, ConfigProblem] = {}

    @property
    def problems(self) -> tuple[ConfigProblem, ...]:
        """The files not served as written now, by path (any thread: a snapshot)."""
        problems = dict(self._problems)
        return tuple(problems[path] for path in sorted(problems))

    def load(self) -> list[PipelineConfig]:
        """Every valid config now; the invalid files of a folder go to :attr:`problems`.

        Raises:
            ConfigError: no config file; a single config file that is invalid; or a folder
                none of whose files is valid (every problem listed).
        """
        files = self._files()
        if not files:
            raise ConfigError(str(self._path), ["no pipeline config (*.yaml) found"])
        if not self._path.is_dir():
            files = files[:1]
            config = load_pipeline_config(files[0])
            self._digests[files[0]] = self._digest(files[0])
            self._configs[config.name] = (files[0], config)
            return [config]
        configs: list[PipelineConfig] = []
        for file in files:
            try:
                digest = self._digest(file)
                config = load_pipeline_config(file)
            except OSError as exc:
                self._report(file, ConfigError(str(file), [f"cannot read the file: {exc}"]))
                continue
            except ConfigError as exc:
                self._report(file, exc, digest)
                continue
            if config.name in self._configs:
                self._report(file, _defined_twice(file, config.name, self._configs))
                continue
            self._digests[file] = digest
            self._configs[config.name] = (file, config)
            configs.append(config)
        if not configs:
            raise ConfigError(
                str(self._path), [f"no valid pipeline config: {p.error}" for p in self.problems]
            )
        return configs

    def changes(self) -> list[ConfigEvent]:
        events: list[ConfigEvent] = []
        files = self._files()
        present = set(files)
        self._read_as = {f: read for f, read in self._read_as.items() if f in present}
        served = {f: name for name, (f, _) in self._configs.items()}
        seen: set[str] = set()
        for file in files:
            try:
                digest = self._digest(file)
            except OSError as exc:
                log.warning("cannot read %s: %s", file, exc)
                continue
            known = served.get(file)
            if self._digests.get(file) == digest and (known is not None or file in self._problems):
                if known is not None:
                    seen.add(known)
                continue  # unchanged: served as it was, or still reported
            try:
                config = load_pipeline_config(file)
            except ConfigError as exc:
                self._report(file, exc, digest, keeps=known)
                if known is not None:
                    seen.add(known)
                continue
            if config.name in seen:  # looked at again each time: the other file may go
                self._report(file, _defined_twice(file, config.name, self._configs))
                continue
            self._digests[file] = digest
            self._resolved(file)
            seen.add(config.name)
            if known is not None and known != config.name:
                events.append(ConfigEvent(ConfigChange.REMOVED, known, None))
                del self._configs[known]
            served[file] = config.name
            change = ConfigChange.CHANGED if config.name in self._configs else ConfigChange.ADDED
            self._configs[config.name] = (file, config)
            events.append(ConfigEvent(change, config.name, config))
        for name in [n for n in self._configs if n not in seen]:
            file, _ = self._configs.pop(name)
            self._digests.pop(file, None)
            events.append(ConfigEvent(ConfigChange.REMOVED, name, None))
        for file in [f for f in self._problems if f not in files]:
            self._digests.pop(file, None)
            del self._problems[file]
            log.info("%s is gone: no longer reported", file)
        return events

    def _report(
        self, file: Path, error: ConfigError, digest: bytes | None = None, keeps: str | None = None
    ) -> None:
        """Record ``error`` as the problem of ``file``, logged (on one line) when it is new.
        With ``digest``, the file is not read again until its content changes."""
        message = " ".join(str(error).split())
        if digest is not None:
            self._digests[file] = digest
        previous = self._problems.get(file)
        if previous is None or (previous.error, previous.pipeline) != (message, keeps):
            if keeps is not None:
                log.error("%s; pipeline %s keeps its previous config", message, keeps)
            else:
                log.error("%s; not served until the file is fixed", message)
        since = previous.since if previous is not None else time.time()
        self._problems[file] = ConfigProblem(str(file), message, since, keeps)

    def _resolved(self, file: Path) -> None:
        if self._problems.pop(file, None) is not None:
            log.warning("%s is valid again", file)

    def _digest(self, file: Path) -> bytes:
        """The SHA-256 of ``file``'s content; read again only when its status changed or is
        too recent to tell a second write from the first."""
        status = file.stat()
        key = (status.st_ino, status.st_size, status.st_mtime_ns, status.st_ctime_ns)
        known = self._read_as.get(file)
        if known is not None and known[0] == key and time.time() - status.st_mtime > RACY_SECONDS:
            return known[1]
        digest = hashlib.sha256(file.read_bytes()).digest()
        self._read_as[file] = (key, digest)
        return digest

    def _files(self) -> list[Path]:
        if self._path.is_dir():
            return sorted(p for p in self._path.glob("*.yaml") if p.is_file())
        return [self._path] if self._path.exists() else []


def _defined_twice(
    file: Path, name: str, configs: dict[str, tuple[Path, PipelineConfig]]
) -> ConfigError:
    return ConfigError(
        str(file), [f"name: pipeline {name!r} is also defined in {configs[name][0]}"]
    )
