"""A Python ``logging`` format string (``logging.Formatter``'s ``%``-style ``fmt``), turned into
the regular expression that reads the records it wrote back into their attributes.

``%(asctime)s %(levelname)-8s %(name)s: %(message)s`` becomes an anchored pattern with one
group per placeholder: ``asctime`` matches the default ``datefmt`` (``2026-11-28 13:00:00,123``),
``created`` a Unix time, a ``d``/``f`` conversion a number, ``levelname`` a word, and any other
placeholder the shortest text up to what follows it. ``%(message)s`` must come last: the
message runs to the record's end, its later lines and the traceback ``logging`` appends to it
included (:data:`TRACEBACK_PATTERN` tells them apart). The pattern is the same in Python's
``re`` and in Java's (Spark's ``regexp_extract``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

DEFAULT_PYTHON_LOG_FORMAT = "%(levelname)s:%(name)s:%(message)s"
"""``logging.BASIC_FORMAT``: what ``logging.basicConfig()`` writes."""
PLACEHOLDER = re.compile(
    r"(?P<escape>%%)"
    r"|%\((?P<name>\w+)\)(?P<flags>[-#0 +]*)(?P<width>\d*)(?:\.\d+)?(?P<kind>[sdfrixXeEgG])"
)
"""A ``%(name)...s`` placeholder of a ``logging`` format string."""

ATTRIBUTES = frozenset(
    {
        "asctime", "created", "filename", "funcName", "levelname", "levelno", "lineno",
        "message", "module", "msecs", "name", "pathname", "process", "processName",
        "relativeCreated", "taskName", "thread", "threadName",
    }
)  # fmt: skip
"""The ``LogRecord`` attributes a format string may name (Python's documentation)."""

ASCTIME_LAYOUT = "yyyy-MM-dd HH:mm:ss,SSS"
"""``asctime`` with ``logging``'s default ``datefmt``, as a Spark datetime pattern."""
TRACEBACK_PATTERN = (
    r"\n(?=Traceback \(most recent call last\):|Stack \(most recent call last\):"
    r"|  \+ Exception Group Traceback \(most recent call last\):"
    r"|[^\n]*\n\n(?:The above exception was the direct cause of the following exception:"
    r"|During handling of the above exception, another exception occurred:))"
)
"""Where the text ``logging`` appends to a record's message begins: its exception's traceback
(an exception group's too), a cause that was never raised (its exception's line, then the
line that chains it), or its ``stack_info``."""

_ASCTIME = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}"
_NUMBER = {"d": r"-?\d+", "i": r"-?\d+", "f": r"-?\d+(?:\.\d+)?", "e": r"-?[\d.]+e[-+]\d+"}
_WORD = {"levelname": r"[A-Z]+|Level \d+", "name": r"[^\s]+?"}


class LogFormatError(ValueError):
    """A format string Sluice cannot read records back with."""


@dataclass(frozen=True)
class PythonLogLayout:
    """How to read records a format string wrote: ``pattern`` (anchored, ``(?s)``) and the
    group of each attribute it names."""

    log_format: str
    pattern: str
    groups: dict[str, int]

    def group(self, attribute: str) -> int | None:
        """The pattern's group for ``attribute``; None when the format does not name it."""
        return self.groups.get(attribute)


def python_log_layout(log_format: str) -> PythonLogLayout:
    """The layout of records ``log_format`` wrote.

    Raises:
        LogFormatError: it names no ``%(message)s``, or not as its end, names an attribute
            ``logging`` does not have, names one twice, or holds a ``%`` that is no
            placeholder (the message says which).
    """
    parts: list[str] = []
    groups: dict[str, int] = {}
    position = 0
    for found in PLACEHOLDER.finditer(log_format):
        if found["escape"]:
            continue  # "%%": a literal "%", kept in the literal text around it
        literal = log_format[position : found.start()]
        if "%" in literal.replace("%%", ""):
            raise LogFormatError(f"{literal!r} holds a % that is not a %(name)s placeholder")
        parts.append(re.escape(literal.replace("%%", "%")))
        name, kind, width = found["name"], found["kind"], found["width"]
        if name not in ATTRIBUTES:
            raise LogFormatError(f"%({name}) is not an attribute of a logging record")
        if name in groups:
            raise LogFormatError(f"%({name}) is named twice")
        if name == "message" and found.end() != len(log_format):
            raise LogFormatError("%(message)s must end the format (its text runs to the end)")
        groups[name] = len(groups) + 1
        if name == "message":
            body = r"(.*)"
        elif name == "asctime":
            body = f"({_ASCTIME})"
        elif name in _WORD and kind == "s":
            body = f"({_WORD[name]})"
        elif kind in _NUMBER:
            body = f"({_NUMBER[kind]})"
        elif name in ("created", "relativeCreated", "msecs") and kind == "s":
            body = r"(-?\d+(?:\.\d+)?)"
        else:
            body = r"(.*?)"
        if width:  # padded with spaces to the width, before (right-aligned) or after it
            body = f" *{body}" if "-" not in found["flags"] else f"{body} *"
        parts.append(body)
        position = found.end()
    if "message" not in groups:
        raise LogFormatError("the format names no %(message)s")
    return PythonLogLayout(log_format, "(?s)^" + "".join(parts) + "$", groups)
