"""Reading a manifest's JSON fields, with errors that name them."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import TypeGuard, TypeVar

from pipeline_core.errors import LandingError

_CRC32 = re.compile(r"[0-9a-fA-F]{8}")
_Value = TypeVar("_Value")


class ManifestError(LandingError):
    """A batch folder or its manifest breaks the staging contract: the checkpoint cannot be
    landed. The message names the manifest, the part, the segment and the field."""


def problem(where: str, what: str) -> ManifestError:
    """The error for ``what`` is wrong ``where`` (a part, a segment; empty: the manifest)."""
    return ManifestError(f"{where}: {what}" if where else what)


def read_object(value: object, where: str) -> dict[str, object]:
    """``value``, a JSON object.

    Raises:
        ManifestError: it is not one.
    """
    if not isinstance(value, dict):
        raise problem(where or "the manifest", "not an object")
    return value


def read_field(entry: Mapping[str, object], key: str, where: str) -> object:
    """``entry[key]``.

    Raises:
        ManifestError: ``entry`` has no ``key``.
    """
    if key not in entry:
        raise problem(where, f"no {key!r}")
    return entry[key]


def read_count(entry: Mapping[str, object], key: str, where: str) -> int:
    """``entry[key]``, a non-negative JSON integer.

    Raises:
        ManifestError: it is missing or is not one.
    """
    return _read(entry, key, where, _is_count, "a non-negative integer")


def read_text(entry: Mapping[str, object], key: str, where: str) -> str:
    """``entry[key]``, a non-empty string.

    Raises:
        ManifestError: it is missing or is not one.
    """
    return _read(entry, key, where, _is_text, "a string")


def read_crc32(entry: Mapping[str, object], key: str, where: str) -> str:
    """``entry[key]``, a CRC-32 as 8 hex digits (in lower case).

    Raises:
        ManifestError: it is missing or is not one.
    """
    return _read(entry, key, where, _is_crc32, "8 hex digits").lower()


def read_list(entry: Mapping[str, object], key: str, where: str) -> list[object]:
    """``entry[key]``, a JSON array.

    Raises:
        ManifestError: it is missing or is not one.
    """
    value = read_field(entry, key, where)
    if not isinstance(value, list):
        raise problem(where, f"{key} is not a list")
    return value


def read_time(entry: Mapping[str, object], key: str, where: str) -> datetime:
    """``entry[key]``, an ISO 8601 time with a UTC offset.

    Raises:
        ManifestError: it is missing, is not one, or has no offset.
    """
    value = read_field(entry, key, where)
    try:
        time = datetime.fromisoformat(value) if isinstance(value, str) else None
    except ValueError:
        time = None
    if time is None:
        raise problem(where, f"{key} {value!r} is not an ISO 8601 time")
    if time.tzinfo is None:
        raise problem(where, f"{key} has no UTC offset: {value!r}")
    return time


def _read(
    entry: Mapping[str, object],
    key: str,
    where: str,
    accepts: Callable[[object], TypeGuard[_Value]],
    expected: str,
) -> _Value:
    """``entry[key]``, if ``accepts`` it.

    Raises:
        ManifestError: it is missing, or is not ``expected``.
    """
    value = read_field(entry, key, where)
    if not accepts(value):
        raise problem(where, f"{key} {value!r} is not {expected}")
    return value


def _is_count(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _is_text(value: object) -> TypeGuard[str]:
    return isinstance(value, str) and bool(value)


def _is_crc32(value: object) -> TypeGuard[str]:
    return isinstance(value, str) and _CRC32.fullmatch(value) is not None
