"""A check of ``sluice validate``: what was checked, how it ended (:class:`CheckStatus`), one
line saying so."""

from __future__ import annotations

from dataclasses import dataclass

from pipeline_core._compat import StrEnum


class CheckStatus(StrEnum):
    """How a check ended; the worst one decides ``sluice validate``'s exit status."""

    OK = "ok"
    INVALID = "invalid"
    """The config is wrong (or names something that cannot work): fix the file."""
    UNREACHABLE = "unreachable"
    """Something the config names cannot be reached now: fix the environment."""
    NOT_MIGRATED = "not migrated"
    """The metastore does not exist or is behind: ``sluice db upgrade``."""


@dataclass(frozen=True)
class Check:
    """One check of a pipeline: what was checked, how it ended, one line saying so."""

    name: str
    """What was checked: ``schedule``, ``source access``, ``metastore``, ``sink web``..."""
    status: CheckStatus
    message: str
    details: tuple[str, ...] = ()
    """More lines (a source's matching files)."""

    @property
    def ok(self) -> bool:
        return self.status is CheckStatus.OK
