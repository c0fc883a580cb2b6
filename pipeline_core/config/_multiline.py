"""A source's multiline events: how its lines join into events, and the bounds of one."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import Field, field_validator, model_validator

from pipeline_core._compat import StrEnum
from pipeline_core.config._base import _Strict


class MultilinePreset(StrEnum):
    """The built-in rules for what the programs of this stack write
    (``pipeline_core.source`` implements them)."""

    PYTHON = "python"
    """Python's ``logging`` with ``logger.exception``: the log line that raised with its
    traceback, chained sections and exception groups."""
    JAVA = "java"
    """log4j's ``%ex`` (Spark's logs): ``at`` frames, ``Caused by:``, ``Suppressed:``,
    ``... N more``, and the Python tracebacks Spark's ``PythonException`` carries."""
    GO = "go"
    """A Go panic or fatal error with its goroutine dump."""


DEFAULT_MAX_LINES = 500
"""Filebeat's default; Fluent Bit and Vector bound bytes only."""
DEFAULT_MAX_BYTES = 512 * 1024
DEFAULT_FLUSH_AFTER_S = 1.0


class MultilineConfig(_Strict):
    """How a source's lines join into events (a Python traceback, a Java stack trace).

    A line continues the event before it if the ``preset`` says so, or it matches
    ``continue_pattern``, or (given a ``start_pattern``) it does not match ``start_pattern``;
    a line after one matching ``end_pattern`` begins an event. Give a ``preset``, a
    ``start_pattern`` or a ``continue_pattern`` (or several).

    An event is handed on whole or not at all: the last event of a file stays unread (a
    checkpoint seals everything before it and nothing of it) until a line that begins
    another event follows it, the file has not grown for ``flush_after_s``, the file was
    rotated and is read to its end, or the event reaches ``max_lines`` or ``max_bytes``.
    """

    preset: MultilinePreset | None = None
    start_pattern: str | None = None
    """A Python regular expression a line that begins an event matches at its start
    (``'\\d{4}-\\d\\d-\\d\\d '``: every line that starts with a date)."""
    continue_pattern: str | None = None
    """One that a line continuing the event before it matches at its start."""
    end_pattern: str | None = None
    """One that the last line of an event matches at its start."""
    max_lines: Annotated[int, Field(ge=1)] = DEFAULT_MAX_LINES
    """An event is closed at this many lines: its row says ``cut: lines``, and the lines after
    it, up to the next line that begins an event, land as the next row, ``cut: headless``."""
    max_bytes: Annotated[int, Field(ge=1024)] = DEFAULT_MAX_BYTES
    """Likewise at this many bytes (``cut: bytes``). At most ``collector.read_chunk_bytes``."""
    flush_after_s: Annotated[float, Field(gt=0)] = DEFAULT_FLUSH_AFTER_S
    """A file's last event is handed on once the file has not grown for this long."""

    @field_validator("start_pattern", "continue_pattern", "end_pattern")
    @classmethod
    def _compiles(cls, pattern: str | None) -> str | None:
        if pattern is not None:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ValueError(f"not a regular expression: {exc}") from exc
        return pattern

    @model_validator(mode="after")
    def _has_a_rule(self) -> MultilineConfig:
        if self.preset is None and self.start_pattern is None and self.continue_pattern is None:
            raise ValueError("give a preset, a start_pattern or a continue_pattern")
        return self
