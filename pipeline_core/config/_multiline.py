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
    """Python's ``logging`` with ``logger.exception`` (or ``exc_info``) and ``stack_info``.

    Covers: the traceback (frames with their source lines and carets, ``[Previous line
    repeated N more times]``, a ``SyntaxError``'s lines), chained exceptions (``raise ... from``,
    an exception raised while handling another, a cause that was never raised), exception
    groups, ``Stack (most recent call last):``; pyspark's exceptions and Py4J's
    ``Py4JJavaError`` (the Java stack trace in its message: ``: org.apache...``, ``Caused
    by:``, ``Suppressed:``, ``... N more``, ``Driver stacktrace:``), and Spark's query context
    in an error's message (``== SQL (line 1, position 8) ==`` with the query's lines and their
    carets; ``== DataFrame ==``). Tested against what ``logging`` writes in four formats
    (``%(asctime)s %(levelname)s %(name)s: %(message)s``, Airflow 2's task log, ``basicConfig``'s
    ``%(levelname)s:%(name)s:%(message)s``, ``%(levelname)s: %(message)s``) and against a
    PySpark driver's log.

    Known limits: a line of a record that is not indented and is none of the above begins an
    event of its own: a message of several lines, an exception whose message has several lines
    (its later lines), an exception's notes (``add_note``), pyspark's ``JVM stacktrace:`` (with
    ``spark.sql.pyspark.jvmStacktrace.enabled``). Give a ``start_pattern`` (the format's first
    field, such as its date) for such logs. A record whose first line is indented, blank or
    starts with one of the words above joins the event before it. Airflow 3's task logs are JSON
    lines (an exception is a field of its record's line): they need no multiline rule."""
    JAVA = "java"
    """log4j's ``%ex`` (Spark's logs, in Spark's default pattern ``%d{yy/MM/dd HH:mm:ss} %p
    %c{1}: %m%n%ex``): the exception's line (a class named ``...Exception``, ``...Error``,
    ``...Throwable`` or ``...Failure``) before its frames or before its message's query
    context, ``at`` frames, ``Caused by:``, ``Suppressed:``, ``... N more``, ``Driver
    stacktrace:``, the Python traceback Spark's ``PythonException`` carries, Spark's query
    contexts, and all the ``python`` preset covers. Tested against a PySpark job's log4j2 log
    (executors' ``PythonException`` and ``SparkArithmeticException``, a job's
    ``SparkException`` with its causes).

    Known limits: an exception message's later lines (other than a query context) that are not
    indented begin events of their own; so does a line after an exception line that does not
    look like one (a class named otherwise). An exception's line is known by the frame after
    it: if a read ends between them (log4j2's file appender writes a stack trace longer than
    its 8 KiB buffer in several writes) the record can be handed on without its stack trace,
    which follows as a ``headless`` event."""
    GO = "go"
    """A Go panic or fatal error with its goroutine dump. Not tested against a real Go
    program's output (no Go toolchain where the tests run)."""


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
