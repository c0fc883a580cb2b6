"""A source's own pattern (``format: regex``): a regular expression of named groups, each group a
column of the source's table, typed as the source declares.

``^(?P<time>\\S+ \\S+) (?P<level>[A-Z]+) (?P<message>.*)`` with ``columns: {time: timestamp}``
lands ``time`` (timestamp), ``level`` and ``message`` (strings, the type of a group the source
does not declare). The pattern is matched from the event's first character, as Python's
``re.match`` does (``$`` or ``\\z`` at its end makes it match the whole event); a multiline
event is one text, its lines joined by ``\\n``: ``(?s)`` lets ``.`` cross them.

The pattern is written in Python's syntax and checked with Python's ``re``; the landing runs
it in Java's (Spark's ``regexp_extract``), so only what the two read alike is accepted: named
groups become numbered ones (their numbers are the same in both), and a named back-reference
``(?P=name)``, a conditional ``(?(1)...)`` and Python-only escapes are refused.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from pipeline_core.formats._format_spec import ColumnType

RESERVED_COLUMNS = frozenset(
    {"event_id", "file_fingerprint", "byte_offset", "host", "event_time", "checkpoint_id"}
)
"""Columns every source table has: no group may be named like one."""
COLUMN_NAME = re.compile(r"[a-z][a-z0-9_]{0,62}")
"""A group's name: a column name every engine reading the lake takes unquoted."""
_NAMED_GROUP = re.compile(r"\(\?P<(\w+)>")
_NOT_IN_JAVA = (
    (re.compile(r"\(\?P="), "a named back-reference (?P=name): use \\N with the group's number"),
    (re.compile(r"\(\?\("), "a conditional group (?(...)...)"),
    (re.compile(r"(?<!\\)\\[ZU]|(?<!\\)\\N\{"), "Python-only escapes (\\Z, \\U, \\N{...})"),
)


class UserPatternError(ValueError):
    """A source's ``pattern`` or ``columns`` cannot be used (the message says why)."""


@dataclass(frozen=True)
class UserPattern:
    """A source's pattern, checked: its columns in the order of their groups, and the pattern
    as Java reads it (numbered groups, anchored at the event's start)."""

    columns: tuple[tuple[str, ColumnType], ...]
    java_pattern: str
    """Group ``i + 1`` holds column ``i``."""

    def group(self, column: str) -> int:
        """The group number of ``column``."""
        return [name for name, _ in self.columns].index(column) + 1


def user_pattern(
    pattern: str, columns: Mapping[str, ColumnType], time_column: str | None = None
) -> UserPattern:
    """Check ``pattern`` with its declared ``columns`` and ``time_column``.

    Raises:
        UserPatternError: the pattern does not compile, has no named group, has unnamed
            capturing groups, uses what Java reads otherwise, names a group like a common
            column or not as a column can be named; a declared column is no group; the time
            column is not a declared timestamp.
    """
    try:
        compiled = re.compile(pattern)
    except re.error as exc:
        raise UserPatternError(f"does not compile: {exc}") from exc
    for construct, what in _NOT_IN_JAVA:
        if construct.search(pattern):
            raise UserPatternError(f"uses {what}, which Spark's Java regular expressions lack")
    names = sorted(compiled.groupindex, key=compiled.groupindex.__getitem__)
    if not names:
        raise UserPatternError("has no named group (?P<column>...): it would land no column")
    if compiled.groups != len(names):
        raise UserPatternError(
            "has a capturing group without a name: write (?:...) for a group that is no column"
        )
    for name in names:
        if not COLUMN_NAME.fullmatch(name):
            raise UserPatternError(
                f"group {name!r} is no column name (lower case letters, digits and _, "
                "starting with a letter)"
            )
        if name in RESERVED_COLUMNS:
            raise UserPatternError(f"group {name!r} is a column every source table has")
    maps = sorted(name for name, kind in columns.items() if kind is ColumnType.MAP)
    if maps:
        raise UserPatternError(f"columns {maps}: a group's column is a scalar, not a map")
    undeclared = sorted(set(columns) - set(names))
    if undeclared:
        raise UserPatternError(f"columns {undeclared} are no group of the pattern")
    if time_column is not None and columns.get(time_column) is not ColumnType.TIMESTAMP:
        raise UserPatternError(
            f"time_column {time_column!r} is not a column declared as a timestamp"
        )
    typed = tuple((name, columns.get(name, ColumnType.STRING)) for name in names)
    return UserPattern(typed, rf"\A(?:{_NAMED_GROUP.sub('(', pattern)})")
