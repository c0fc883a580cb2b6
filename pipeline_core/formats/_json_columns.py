"""The columns a ``json_lines`` source declares: a key of its objects (a dotted path reaches into
nested ones), the column it lands in, and the type it is read as.

``columns: {level: string, status: int, "http.duration_ms": double}`` lands ``level``,
``status`` and ``http_duration_ms`` beside ``payload`` (the whole object, as always), and a
``rescued`` map: for each declared key whose value is not of its column's type (``"abc"`` for
an ``int``, an object for a ``double``), the key and the value as text, the column null.
Nothing is dropped: the row lands, ``payload`` holds the object whole, ``rescued`` says which
values did not fit (Databricks Auto Loader's ``_rescued_data``, by declared key).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from pipeline_core.formats._format_spec import ColumnType
from pipeline_core.formats._user_pattern import COLUMN_NAME, RESERVED_COLUMNS

RESCUED_COLUMN = "rescued"
"""The map of the declared values that were not of their column's type."""
_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
_SCALARS = (
    ColumnType.STRING,
    ColumnType.INT,
    ColumnType.LONG,
    ColumnType.DOUBLE,
    ColumnType.BOOLEAN,
    ColumnType.TIMESTAMP,
)


class JsonColumnsError(ValueError):
    """A ``json_lines`` source's ``columns`` cannot be landed (the message says why)."""


@dataclass(frozen=True)
class JsonColumn:
    """One declared key: where it is in an object, the column it lands in, its type."""

    key: str
    """As declared: ``status``, ``http.duration_ms``."""
    name: str
    type: ColumnType

    @property
    def json_path(self) -> str:
        """The key as Spark's ``get_json_object`` path (``$.http.duration_ms``)."""
        return "$." + self.key


def json_columns(columns: Mapping[str, ColumnType]) -> tuple[JsonColumn, ...]:
    """The declared keys of a ``json_lines`` source, checked.

    Raises:
        JsonColumnsError: a key is not a dotted path of JSON names, two keys make one column,
            a column would be named like a common one or ``rescued``, a type is not a scalar.
    """
    found: dict[str, JsonColumn] = {}
    for key, kind in columns.items():
        parts = key.split(".")
        if not all(_KEY.fullmatch(part) for part in parts):
            raise JsonColumnsError(
                f"key {key!r} is not a dotted path of names (letters, digits, _ and -)"
            )
        name = "_".join(parts).replace("-", "_").lower()
        if not COLUMN_NAME.fullmatch(name):
            raise JsonColumnsError(f"key {key!r} makes no column name ({name!r})")
        if name in RESERVED_COLUMNS or name in (RESCUED_COLUMN, "payload"):
            raise JsonColumnsError(f"key {key!r} would land in column {name!r}, which is taken")
        if name in found:
            raise JsonColumnsError(
                f"keys {found[name].key!r} and {key!r} both make column {name!r}"
            )
        if kind not in _SCALARS:
            raise JsonColumnsError(f"key {key!r}: a declared key is a scalar, not a {kind.value}")
        found[name] = JsonColumn(key, name, kind)
    return tuple(found.values())


def json_declared_columns(columns: Mapping[str, ColumnType]) -> tuple[tuple[str, ColumnType], ...]:
    """The table columns a ``json_lines`` source's ``columns`` add: one per key, then
    ``rescued`` (none without declared keys)."""
    declared = json_columns(columns)
    if not declared:
        return ()
    return (*((c.name, c.type) for c in declared), (RESCUED_COLUMN, ColumnType.MAP))
