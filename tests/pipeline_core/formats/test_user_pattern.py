"""A source's own pattern (``format: regex``): what is accepted, and the errors that name the key
and the file."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from pipeline_core.config import load_pipeline_config
from pipeline_core.errors import ConfigError
from pipeline_core.formats import ColumnType, UserPatternError, user_pattern

PATTERN = r"(?s)(?P<time>\S+ \S+) \| (?P<level>[A-Z]+) \| pid=(?P<pid>\d+) \| (?P<message>.*)"


def _config(tmp_path: Path, **source: Any) -> Path:
    document = {
        "name": "app",
        "sources": [{"name": "app", "paths": ["logs/*.log"], "format": "regex", **source}],
    }
    path = tmp_path / "app.yaml"
    path.write_text(yaml.safe_dump(document))
    return path


def test_should_type_the_declared_groups_and_keep_the_others_strings() -> None:
    pattern = user_pattern(PATTERN, {"time": ColumnType.TIMESTAMP, "pid": ColumnType.LONG}, "time")

    assert pattern.columns == (
        ("time", ColumnType.TIMESTAMP),
        ("level", ColumnType.STRING),
        ("pid", ColumnType.LONG),
        ("message", ColumnType.STRING),
    )
    assert pattern.group("pid") == 3


def test_should_hand_java_numbered_groups_anchored_at_the_events_start() -> None:
    """Java names groups otherwise (no ``P``, no ``_``): the groups are numbered alike in both."""
    pattern = user_pattern(r"(?:x)?(?P<first_word>\w+) (?P<rest>.*)", {})
    java = pattern.java_pattern

    assert "?P<" not in java and java.startswith(r"\A(?:")
    python = re.compile(r"\A(?:" + r"(?:x)?(\w+) (.*)" + ")")
    match = python.match("hello big world")
    assert match is not None and match.groups() == ("hello", "big world")
    assert re.match(java, "hello big world") is not None  # the same text in both syntaxes


def test_should_take_a_regex_source_from_a_config_file(tmp_path: Path) -> None:
    path = _config(
        tmp_path,
        pattern=PATTERN,
        columns={"time": "timestamp", "pid": "long"},
        time_column="time",
        time_layout="yyyy-MM-dd HH:mm:ss,SSS",
        timezone="America/New_York",
    )

    source = load_pipeline_config(path).sources[0]

    assert source.columns == {"time": ColumnType.TIMESTAMP, "pid": ColumnType.LONG}
    assert (source.time_column, source.timezone) == ("time", "America/New_York")


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ({}, "format regex needs a pattern"),
        ({"pattern": "(?P<a>[a-z"}, "does not compile"),
        ({"pattern": r"\d+ \w+"}, "has no named group"),
        ({"pattern": r"(?P<a>\w+) (\d+)"}, "has a capturing group without a name"),
        ({"pattern": r"(?P<Level>\w+)"}, "group 'Level' is no column name"),
        ({"pattern": r"(?P<host>\w+)"}, "group 'host' is a column every source table has"),
        ({"pattern": r"(?P<a>\w+) (?P=a)"}, "a named back-reference"),
        ({"pattern": r"(?P<a>\w+)\Z"}, "Python-only escapes"),
        ({"pattern": r"(?P<a>\w+)", "columns": {"b": "int"}}, "columns ['b'] are no group"),
        ({"pattern": r"(?P<a>\w+)", "columns": {"a": "integer"}}, "columns.a"),
        ({"pattern": r"(?P<a>\w+)", "time_column": "a"}, "not a column declared as a timestamp"),
        ({"pattern": r"(?P<a>\w+)", "columns": {"a": "map<string,string>"}}, "not a map"),
        (
            {"pattern": r"(?P<a>\w+)", "columns": {"a": ColumnType.EXCEPTION.value}},
            "column a: struct<class:string",
        ),
        ({"format": "raw", "pattern": r"(?P<a>\w+)"}, "pattern belong to format regex only"),
        ({"format": "raw", "time_layout": "yyyy"}, "time_layout belong to format regex only"),
    ],
)
def test_should_refuse_a_pattern_it_cannot_land_naming_the_key_and_the_file(
    tmp_path: Path, source: dict[str, Any], message: str
) -> None:
    path = _config(tmp_path, **source)

    with pytest.raises(ConfigError) as caught:
        load_pipeline_config(path)

    assert message in str(caught.value)
    assert str(path) in str(caught.value)
    assert "sources" in str(caught.value)


def test_should_say_why_a_pattern_is_refused() -> None:
    with pytest.raises(UserPatternError, match="no group of the pattern"):
        user_pattern(r"(?P<a>\w+)", {"zz": ColumnType.INT})
