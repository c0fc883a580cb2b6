"""build_sink: each sink config builds its sink; sink configs reject bad values by field."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from pipeline_core.config._sinks import (
    FileSinkConfig,
    HttpFormat,
    HttpSinkConfig,
    NullSinkConfig,
    SqlSinkConfig,
    StdoutSinkConfig,
)
from pipeline_core.sinks import (
    HttpSink,
    NullSink,
    RollingFileSink,
    SqlSink,
    StdoutSink,
    build_sink,
)

DATA_DIR = Path("/var/lib/sluice")


def test_builds_an_http_sink_with_its_settings() -> None:
    config = HttpSinkConfig(
        url="https://logs.example.com/v1/ingest?tenant=a",
        format=HttpFormat.JSON_ARRAY,
        gzip=False,
        headers={"Authorization": "Bearer t"},
        timeout_s=3,
        max_request_bytes=65536,
        max_attempts=7,
        dead_letter=Path("/srv/refused.jsonl"),
    )

    sink = build_sink("web", config, data_dir=DATA_DIR)

    assert isinstance(sink, HttpSink)
    assert sink.name == "web"
    assert sink.url == config.url
    assert sink.format is HttpFormat.JSON_ARRAY
    assert sink.gzip is False
    assert sink.timeout_s == 3
    assert sink.max_request_bytes == 65536
    assert sink.retry.max_attempts == 7
    assert sink.dead_letter == Path("/srv/refused.jsonl")


def test_http_dead_letter_defaults_under_the_data_dir() -> None:
    sink = build_sink("web", HttpSinkConfig(url="http://x/"), data_dir=DATA_DIR)

    assert isinstance(sink, HttpSink)
    assert sink.dead_letter == DATA_DIR / "dead_letter" / "web.jsonl"


def test_http_dead_letter_null_means_none() -> None:
    config = HttpSinkConfig.model_validate({"url": "http://x/", "dead_letter": None})

    sink = build_sink("web", config, data_dir=DATA_DIR)

    assert isinstance(sink, HttpSink)
    assert sink.dead_letter is None


def test_builds_an_sql_sink() -> None:
    config = SqlSinkConfig(url="postgresql+psycopg://u@db/logs", table="web_events", max_attempts=2)

    sink = build_sink("db", config, data_dir=DATA_DIR)

    assert isinstance(sink, SqlSink)
    assert sink.url == config.url
    assert sink.table.name == "web_events"
    assert sink.retry.max_attempts == 2


def test_builds_a_rolling_file_sink() -> None:
    config = FileSinkConfig(path=Path("/srv/out/lines.log"), max_bytes=1000, backups=2)

    sink = build_sink("file", config, data_dir=DATA_DIR)

    assert isinstance(sink, RollingFileSink)
    assert (sink.path, sink.max_bytes, sink.backups) == (Path("/srv/out/lines.log"), 1000, 2)


def test_builds_the_trial_sinks() -> None:
    assert isinstance(build_sink("n", NullSinkConfig(), data_dir=DATA_DIR), NullSink)
    assert isinstance(build_sink("s", StdoutSinkConfig(), data_dir=DATA_DIR), StdoutSink)


def test_an_unknown_config_type_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="no sink is built from"):
        build_sink("x", object(), data_dir=DATA_DIR)  # type: ignore[arg-type]


def test_defaults() -> None:
    http = HttpSinkConfig(url="http://x/")
    assert (http.type, http.format, http.gzip, http.headers, http.timeout_s) == (
        "http",
        HttpFormat.NDJSON,
        True,
        {},
        10.0,
    )
    assert (http.max_request_bytes, http.max_attempts, http.dead_letter) == (4 << 20, 5, None)
    sql = SqlSinkConfig(url="sqlite:///x.db")
    assert (sql.type, sql.table, sql.max_attempts) == ("sql", "sluice_events", 5)
    file = FileSinkConfig(path=Path("x.log"))
    assert (file.type, file.max_bytes, file.backups) == ("file", 128 << 20, 5)
    assert NullSinkConfig().type == "null"
    assert StdoutSinkConfig().type == "stdout"


@pytest.mark.parametrize(
    ("model", "values", "field"),
    [
        (HttpSinkConfig, {"url": "ftp://x/"}, "url"),
        (HttpSinkConfig, {"url": "http://x:port/"}, "url"),
        (HttpSinkConfig, {"url": "http://x/", "format": "xml"}, "format"),
        (HttpSinkConfig, {"url": "http://x/", "timeout_s": 0}, "timeout_s"),
        (HttpSinkConfig, {"url": "http://x/", "max_request_bytes": 10}, "max_request_bytes"),
        (HttpSinkConfig, {"url": "http://x/", "max_attempts": 0}, "max_attempts"),
        (HttpSinkConfig, {"url": "http://x/", "headers": {"Bad Name": "v"}}, "headers"),
        (HttpSinkConfig, {"url": "http://x/", "headers": {"X-A": "v\r\nX-B: w"}}, "headers"),
        (HttpSinkConfig, {"url": "http://x/", "retries": 3}, "retries"),
        (HttpSinkConfig, {"type": "sql", "url": "http://x/"}, "type"),
        (SqlSinkConfig, {"url": "mysql://u@db/logs"}, "url"),
        (SqlSinkConfig, {"url": "not a url"}, "url"),
        (SqlSinkConfig, {"url": "sqlite:///x.db", "table": "drop table;"}, "table"),
        (FileSinkConfig, {}, "path"),
        (FileSinkConfig, {"path": "x.log", "max_bytes": 0}, "max_bytes"),
        (FileSinkConfig, {"path": "x.log", "backups": -1}, "backups"),
        (NullSinkConfig, {"path": "x"}, "path"),
        (StdoutSinkConfig, {"type": "null"}, "type"),
    ],
)
def test_validation_errors_name_the_field(
    model: type[BaseModel], values: dict[str, Any], field: str
) -> None:
    with pytest.raises(ValidationError) as raised:
        model.model_validate(values)

    assert [error["loc"][0] for error in raised.value.errors()] == [field]


def test_configs_are_frozen() -> None:
    config = NullSinkConfig()

    with pytest.raises(ValidationError):
        config.type = "null"  # type: ignore[misc]
