"""The HTTP sink's config (issue 30): credentials refused over plain http:// unless
``allow_insecure``, and the request deadline."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from pipeline_core.config import METASTORE_URL_ENV, HttpSinkConfig, load_pipeline_config
from pipeline_core.config._sinks import DEFAULT_DEADLINE_S
from pipeline_core.errors import ConfigError
from pipeline_core.sinks import HttpSink, build_sink


@pytest.fixture(autouse=True)
def no_metastore_override(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(METASTORE_URL_ENV, raising=False)


def load_with_sink(folder: Path, sink: dict[str, Any]) -> HttpSinkConfig:
    document = {
        "name": "web_access",
        "sources": [{"name": "access", "paths": ["logs/*.log"], "format": "raw"}],
        "sinks": {"lake": {"type": "handoff"}, "web": {"type": "http", **sink}},
    }
    path = folder / "web_access.yaml"
    path.write_text(yaml.safe_dump(document))
    config = load_pipeline_config(path, environ={})
    web = config.sinks["web"]
    assert isinstance(web, HttpSinkConfig)
    return web


@pytest.mark.parametrize(
    ("sink", "named"),
    [
        ({"url": "http://user:s3cr3tPW@logs.internal/in"}, "user:password@"),
        ({"url": "http://logs.internal/in", "headers": {"Authorization": "Bearer s3cr3tPW"}},
         "header Authorization"),
        ({"url": "http://logs.internal/in", "headers": {"X-Api-Key": "s3cr3tPW"}},
         "header X-Api-Key"),
        ({"url": "http://logs.internal/in?source=web&api_key=s3cr3tPW"}, "URL option api_key"),
        ({"url": "http://logs.internal/in?api%5Fkey=s3cr3tPW"}, "URL option api%5Fkey"),
    ],
    ids=["userinfo", "authorization", "api-key-header", "api-key-option", "encoded-option"],
)  # fmt: skip
def test_credentials_over_plain_http_are_refused_naming_allow_insecure(
    tmp_path: Path, sink: dict[str, Any], named: str
) -> None:
    with pytest.raises(ConfigError) as raised:
        load_with_sink(tmp_path, sink)

    message = str(raised.value)
    assert "sinks.web" in message
    assert "allow_insecure: true" in message and "https://" in message
    assert named in message
    assert "s3cr3tPW" not in message


@pytest.mark.parametrize(
    "sink",
    [
        {"url": "http://user:pw@logs.internal/in", "allow_insecure": True},
        {"url": "http://h/in", "headers": {"Authorization": "B x"}, "allow_insecure": True},
        {"url": "https://user:pw@logs.internal/in", "headers": {"X-Api-Key": "k"}},
        {"url": "http://logs.internal/in", "headers": {"X-Request-Source": "sluice"}},
    ],
    ids=["userinfo-allowed", "header-allowed", "https", "no-credentials"],
)  # fmt: skip
def test_credentials_over_https_or_allowed_insecure_are_accepted(
    tmp_path: Path, sink: dict[str, Any]
) -> None:
    assert load_with_sink(tmp_path, sink).url == sink["url"]


def test_the_deadline_defaults_and_reaches_the_sink(tmp_path: Path) -> None:
    assert load_with_sink(tmp_path, {"url": "https://h/in"}).deadline_s == DEFAULT_DEADLINE_S
    config = load_with_sink(tmp_path, {"url": "https://h/in", "deadline_s": 7.5})

    sink = build_sink("web", config, data_dir=tmp_path)

    assert isinstance(sink, HttpSink)
    assert (sink.deadline_s, sink.timeout_s) == (7.5, 10.0)


@pytest.mark.parametrize("deadline", [0, -1])
def test_a_deadline_must_be_positive(tmp_path: Path, deadline: float) -> None:
    with pytest.raises(ConfigError, match="deadline_s"):
        load_with_sink(tmp_path, {"url": "https://h/in", "deadline_s": deadline})
