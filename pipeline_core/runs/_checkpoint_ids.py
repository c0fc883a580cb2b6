"""Checkpoint ids as runs hand them on: an int, or text a template rendered from one or a list."""

from __future__ import annotations

import json


def parse_checkpoint_id(value: int | str) -> int:
    """A checkpoint id from an operator argument, which a template renders as text.

    :raises ValueError: the value is not a positive integer (for example ``"None"``, rendered
        when the upstream XCom is missing).
    """
    try:
        checkpoint_id = int(value)
    except (TypeError, ValueError):
        raise ValueError(f"checkpoint id must be a positive integer, got {value!r}") from None
    if checkpoint_id <= 0:
        raise ValueError(f"checkpoint id must be a positive integer, got {value!r}")
    return checkpoint_id


def parse_checkpoint_ids(value: int | str | list[int] | tuple[int, ...]) -> list[int]:
    """Checkpoint ids from an operator argument: one id, or a list of them (maybe empty).

    The request task returns one id for a run that lands one checkpoint and a list for runs
    that land several (``spark_only``, backfill); rendered into a template they read ``"7"``
    and ``"[3, 4]"``.

    :raises ValueError: anything else (``"None"`` when the upstream XCom is missing).
    """
    if isinstance(value, list | tuple):
        return [parse_checkpoint_id(item) for item in value]
    if isinstance(value, str) and value.strip().startswith("["):
        try:
            items = json.loads(value)
        except ValueError:
            raise ValueError(f"checkpoint ids must be a list of integers, got {value!r}") from None
        if not isinstance(items, list) or not all(
            isinstance(item, int) and not isinstance(item, bool) for item in items
        ):
            raise ValueError(f"checkpoint ids must be a list of integers, got {value!r}")
        return [parse_checkpoint_id(item) for item in items]
    return [parse_checkpoint_id(value)]


def names_one_checkpoint(value: int | str | list[int] | tuple[int, ...]) -> bool:
    """True when ``value`` is one id (``7``, ``"7"``), not a list of them (``[7]``, ``"[7]"``)."""
    return not isinstance(value, list | tuple) and not str(value).strip().startswith("[")
