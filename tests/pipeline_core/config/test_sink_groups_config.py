"""Sinks and sink groups in the pipeline config: defaults, rules, errors that name the key."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from pipeline_core.config import (
    FileSinkConfig,
    HandoffSinkConfig,
    ProcessorKind,
    load_pipeline_config,
)
from pipeline_core.errors import ConfigError


def write(folder: Path, **extra: Any) -> Path:
    document = {
        "name": "web",
        "sources": [{"paths": ["logs/*.log"], "format": "raw"}],
        **extra,
    }
    path = folder / "web.yaml"
    path.write_text(yaml.safe_dump(document))
    return path


def problems(folder: Path, **extra: Any) -> str:
    with pytest.raises(ConfigError) as caught:
        load_pipeline_config(write(folder, **extra))
    return "\n".join(caught.value.problems)


def test_should_default_to_one_handoff_sink_in_its_own_default_group(tmp_path: Path) -> None:
    config = load_pipeline_config(write(tmp_path))

    assert config.sinks == {"lake": HandoffSinkConfig()}
    (group,) = config.sink_groups_in_force
    assert (group.name, group.processor, group.sinks) == ("lake", ProcessorKind.DEFAULT, ["lake"])


def test_should_give_each_sink_its_own_group_when_groups_are_omitted(tmp_path: Path) -> None:
    config = load_pipeline_config(
        write(tmp_path, sinks={"lake": {"type": "handoff"}, "copy": {"type": "file", "path": "x"}})
    )

    assert sorted(g.sinks for g in config.sink_groups_in_force) == [["copy"], ["lake"]]


def test_should_resolve_a_file_sink_path_against_the_config_folder(tmp_path: Path) -> None:
    config = load_pipeline_config(
        write(tmp_path, sinks={"lake": {"type": "handoff"}, "copy": {"type": "file", "path": "o"}})
    )

    copy = config.sinks["copy"]
    assert isinstance(copy, FileSinkConfig)
    assert copy.path == tmp_path / "o"


def test_should_require_exactly_one_handoff_sink(tmp_path: Path) -> None:
    assert "exactly one sink of type 'handoff'" in problems(
        tmp_path, sinks={"copy": {"type": "null"}}
    )


def test_should_name_the_key_of_an_unknown_sink_type(tmp_path: Path) -> None:
    found = problems(tmp_path, sinks={"lake": {"type": "handoff"}, "x": {"type": "kafka"}})
    assert "sinks.x" in found


def test_should_refuse_a_group_naming_an_unknown_sink(tmp_path: Path) -> None:
    found = problems(
        tmp_path,
        sink_groups=[{"name": "lake", "sinks": ["lake"]}, {"name": "web", "sinks": ["nope"]}],
    )
    assert "unknown sink 'nope'" in found


def test_should_refuse_a_sink_in_two_groups(tmp_path: Path) -> None:
    found = problems(
        tmp_path,
        sinks={"lake": {"type": "handoff"}, "a": {"type": "null"}, "b": {"type": "null"}},
        sink_groups=[
            {"name": "lake", "sinks": ["lake"]},
            {"name": "one", "processor": "failover", "sinks": ["a", "b"]},
            {"name": "two", "sinks": ["a"]},
        ],
    )
    assert "sink 'a' is in two sink groups" in found


def test_should_refuse_a_sink_left_out_of_every_group(tmp_path: Path) -> None:
    found = problems(
        tmp_path,
        sinks={"lake": {"type": "handoff"}, "a": {"type": "null"}},
        sink_groups=[{"name": "lake", "sinks": ["lake"]}],
    )
    assert "sinks not in any sink group: a" in found


def test_should_keep_the_handoff_sink_out_of_failover_groups(tmp_path: Path) -> None:
    found = problems(
        tmp_path,
        sinks={"lake": {"type": "handoff"}, "a": {"type": "null"}},
        sink_groups=[{"name": "g", "processor": "failover", "sinks": ["lake", "a"]}],
    )
    assert "must be alone in a 'default' group" in found


@pytest.mark.parametrize(
    ("group", "expected"),
    [
        ({"processor": "default", "sinks": ["a", "b"]}, "takes exactly one sink"),
        ({"processor": "load_balance", "sinks": ["a"]}, "needs at least two sinks"),
        ({"processor": "failover", "sinks": ["a", "b"], "priorities": {"c": 1}}, "c"),
        ({"processor": "failover", "sinks": ["a", "b"], "rewind": "sometimes"}, "rewind"),
        ({"processor": "load_balance", "sinks": ["a", "b"], "selector": "lru"}, "selector"),
    ],
)
def test_should_check_each_processor_fits_its_group(
    tmp_path: Path, group: dict[str, Any], expected: str
) -> None:
    found = problems(
        tmp_path,
        sinks={"lake": {"type": "handoff"}, "a": {"type": "null"}, "b": {"type": "null"}},
        sink_groups=[{"name": "lake", "sinks": ["lake"]}, {"name": "g", **group}],
    )
    assert "sink_groups.1" in found
    assert expected in found
