"""parse_checkpoint_id(s) and names_one_checkpoint: checkpoint ids as templates render them."""

from __future__ import annotations

from typing import Any

import pytest

from pipeline_core.runs import names_one_checkpoint, parse_checkpoint_id, parse_checkpoint_ids


@pytest.mark.parametrize(("value", "expected"), [(7, 7), ("7", 7), (" 12 ", 12)])
def test_one_id_is_a_positive_integer_or_its_text(value: int | str, expected: int) -> None:
    assert parse_checkpoint_id(value) == expected


@pytest.mark.parametrize("value", ["None", "", "x", "0", "-1", "1.5", 0])
def test_anything_else_is_not_an_id(value: int | str) -> None:
    with pytest.raises(ValueError, match="checkpoint id must be a positive integer"):
        parse_checkpoint_id(value)


@pytest.mark.parametrize(
    ("value", "expected"),
    [(7, [7]), ("7", [7]), ("[]", []), ("[3, 4]", [3, 4]), ([3, 4], [3, 4]), ((5,), [5])],
)
def test_ids_are_one_id_or_a_list(value: Any, expected: list[int]) -> None:
    assert parse_checkpoint_ids(value) == expected


@pytest.mark.parametrize("value", ["None", "[1, 1.5]", "[true]", '["1"]', "[1,", "[0]", '{"a": 1}'])
def test_anything_else_is_not_ids(value: str) -> None:
    with pytest.raises(ValueError, match="checkpoint id"):
        parse_checkpoint_ids(value)


@pytest.mark.parametrize(
    ("value", "one"), [(7, True), ("7", True), ([7], False), ((7,), False), (" [7]", False)]
)
def test_names_one_checkpoint(value: Any, one: bool) -> None:
    assert names_one_checkpoint(value) is one
