"""Config values that name folders: ``collector.host`` is a host name, and the staging layout
refuses a segment that would leave its folder."""

from __future__ import annotations

import re
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from pipeline_core.config import HOST_PATTERN, METASTORE_URL_ENV, load_pipeline_config
from pipeline_core.config._base import default_host
from pipeline_core.errors import ConfigError
from pipeline_core.staging_contract import batch_dir, batch_key, checkpoint_dir, inflight_dir
from pipeline_core.staging_contract._layout import part_name


@pytest.fixture(autouse=True)
def no_metastore_override(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(METASTORE_URL_ENV, raising=False)


def config_file(folder: Path, **collector: Any) -> Path:
    path = folder / "pipeline.yaml"
    document = {
        "name": "web_access",
        "sources": [{"name": "access", "paths": ["logs/*.log"], "format": "raw"}],
        "collector": collector,
    }
    path.write_text(yaml.safe_dump(document))
    return path


@pytest.mark.parametrize(
    "host",
    [
        "../../../../escaped",
        "..",
        ".",
        ".hidden",
        "a/b",
        "a\\b",
        "",
        "-rf",
        "web 1",
        "é",
        "h" * 201,
    ],
)
def test_should_reject_a_collector_host_that_is_not_a_host_name(tmp_path: Path, host: str) -> None:
    path = config_file(tmp_path, host=host)

    with pytest.raises(ConfigError) as caught:
        load_pipeline_config(path)

    message = str(caught.value)
    assert str(path.resolve()) in message
    (problem,) = caught.value.problems
    assert problem.startswith("collector.host: ")
    assert "not a host name" in problem and "staging folder" in problem


@pytest.mark.parametrize("host", ["web-1", "web_1.example.internal", "10.0.0.7", "A" * 200])
def test_should_accept_a_host_name(tmp_path: Path, host: str) -> None:
    assert load_pipeline_config(config_file(tmp_path, host=host)).collector.host == host


@pytest.mark.parametrize(
    ("machine", "host"),
    [
        ("web-1", "web-1"),
        ("web-1.example.internal", "web-1.example.internal"),
        ("../escaped", "escaped"),
        ("my machine/1", "my-machine-1"),
        (".", "localhost"),
        ("h" * 300, "h" * 200),
    ],
)
def test_should_make_the_machines_name_a_valid_default_host(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, machine: str, host: str
) -> None:
    monkeypatch.setattr(socket, "gethostname", lambda: machine)

    assert default_host() == host
    assert re.fullmatch(HOST_PATTERN, host)
    assert load_pipeline_config(config_file(tmp_path)).collector.host == host


@pytest.mark.parametrize("segment", ["..", ".", "", "a/b", "../x", "a\\b", "a\0b"])
def test_should_refuse_a_staging_path_segment_that_leaves_its_folder(segment: str) -> None:
    root = Path("/staging")
    builders: list[Callable[[], object]] = [
        lambda: batch_dir(root, "web", 1, segment),
        lambda: batch_dir(root, segment, 1, "host-a"),
        lambda: checkpoint_dir(root, segment, 1),
        lambda: inflight_dir(root, "web", segment),
        lambda: inflight_dir(root, segment, "host-a"),
        lambda: batch_key("web", 1, segment),
        lambda: batch_key(segment, 1, "host-a"),
        lambda: part_name(segment, 0),
    ]
    for build in builders:
        with pytest.raises(ValueError, match="cannot name a folder"):
            build()


def test_should_build_staging_paths_of_valid_segments() -> None:
    root = Path("/staging")

    assert batch_dir(root, "web", 7, "host-a.b_c") == Path("/staging/web/00000007/host-a.b_c")
    assert inflight_dir(root, "web", "host-a") == Path("/staging/web/_inflight/host-a")
    assert batch_key("web", 7, "host-a") == "web/00000007/host-a"
    assert part_name("access", 3) == "part-access-00003.lines"
