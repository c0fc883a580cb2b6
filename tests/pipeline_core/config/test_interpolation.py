"""``${VAR}``, ``${VAR:-default}`` and ``$$`` in config values, through the loader."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from pipeline_core.config import (
    METASTORE_URL_ENV,
    FileSinkConfig,
    HttpSinkConfig,
    PipelineConfig,
    load_pipeline_config,
)
from pipeline_core.config._interpolation import interpolate
from pipeline_core.errors import ConfigError

SOURCE: dict[str, Any] = {"name": "access", "paths": ["logs/access.log*"], "format": "raw"}


@pytest.fixture(autouse=True)
def no_metastore_override(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(METASTORE_URL_ENV, raising=False)


def write_text(folder: Path, text: str) -> Path:
    path = folder / "pipeline.yaml"
    path.write_text(text)
    return path


def write(folder: Path, **extra: Any) -> Path:
    document = {"name": "web_access", "sources": [dict(SOURCE)], **extra}
    return write_text(folder, yaml.safe_dump(document))


def load(path: Path, **environ: str) -> PipelineConfig:
    return load_pipeline_config(path, environ=environ)


def refused(path: Path, **environ: str) -> ConfigError:
    with pytest.raises(ConfigError) as caught:
        load_pipeline_config(path, environ=environ)
    return caught.value


# -- substitution ------------------------------------------------------------------------------


def test_should_replace_a_variable_in_a_string_value(tmp_path: Path) -> None:
    path = write(tmp_path, data_dir="${STATE_DIR}")

    config = load(path, STATE_DIR="/var/lib/sluice")

    assert config.data_dir == Path("/var/lib/sluice")


def test_should_replace_variables_inside_longer_strings_and_lists(tmp_path: Path) -> None:
    source = {**SOURCE, "paths": ["${LOGS}/access.log*", "${LOGS}/${APP}-*.log"]}
    path = write(tmp_path, sources=[source])

    config = load(path, LOGS="/var/log/nginx", APP="shop")

    assert config.sources[0].paths == ["/var/log/nginx/access.log*", "/var/log/nginx/shop-*.log"]


def test_should_read_the_process_environment_by_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SLUICE_TEST_NODE", "node-7")
    path = write(tmp_path, collector={"host": "${SLUICE_TEST_NODE}"})

    assert load_pipeline_config(path).collector.host == "node-7"


def test_should_use_the_default_when_the_variable_is_unset_or_empty(tmp_path: Path) -> None:
    path = write(tmp_path, schedule="${SCHEDULE:-@hourly}")

    assert load(path).schedule == "@hourly"
    assert load(path, SCHEDULE="").schedule == "@hourly"
    assert load(path, SCHEDULE="*/1 * * * *").schedule == "*/1 * * * *"


def test_should_allow_an_empty_default_and_an_empty_value(tmp_path: Path) -> None:
    path = write(tmp_path, lake={"namespace": "web${SUFFIX:-}"}, collector={"host": "h${EMPTY}"})

    config = load(path, EMPTY="")

    assert config.lake.namespace == "web"
    assert config.collector.host == "h"


def test_should_keep_a_default_as_written(tmp_path: Path) -> None:
    path = write(tmp_path, metastore={"url": "${URL:-sqlite:///state/a:b.db}"})

    assert load(path).metastore_url == f"sqlite:///{tmp_path.resolve()}/state/a:b.db"


def test_should_validate_the_replaced_text_like_a_written_value(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        priority="${PRIORITY}",
        collector={"ring_size": "${RING:-64}", "file_events": "${EVENTS:-poll}"},
        handoff={"retain_hours": "${RETAIN}"},
    )

    config = load(path, PRIORITY="5", RETAIN="1.5")

    assert config.priority == 5
    assert config.collector.ring_size == 64
    assert config.collector.file_events == "poll"
    assert config.handoff.retain_hours == 1.5


def test_should_name_key_and_variable_when_the_value_does_not_validate(tmp_path: Path) -> None:
    path = write(tmp_path, collector={"ring_size": "${RING}"})

    error = refused(path, RING="100")

    assert error.problems == [
        "collector.ring_size: Value error, must be a power of two (got '100')"
    ]


def test_should_never_read_a_variables_value_as_yaml(tmp_path: Path) -> None:
    path = write(tmp_path, sources=[{**SOURCE, "time_field": "${FIELD}"}])

    config = load(path, FIELD="time\nname: other")

    assert config.name == "web_access"
    assert config.sources[0].time_field == "time\nname: other"


def test_should_resolve_relative_paths_after_replacing(tmp_path: Path) -> None:
    path = write(tmp_path, data_dir="${STATE:-state}", sinks={
        "lake": {"type": "handoff"},
        "archive": {"type": "file", "path": "${ARCHIVE}/web.log"},
    })  # fmt: skip

    config = load(path, ARCHIVE="archive")

    base = tmp_path.resolve()
    assert config.data_dir == base / "state"
    archive = config.sinks["archive"]
    assert isinstance(archive, FileSinkConfig)
    assert archive.path == base / "archive" / "web.log"


def test_should_not_touch_keys_numbers_or_booleans(tmp_path: Path) -> None:
    outcome = interpolate({"${KEY}": 1, "a": [True, 2.5, None, "${V}"]}, {"KEY": "k", "V": "v"})

    assert outcome.problems == []
    assert outcome.document == {"${KEY}": 1, "a": [True, 2.5, None, "v"]}


def test_should_leave_the_input_document_unchanged() -> None:
    document = {"a": ["${V}"], "b": {"c": "${V}"}}

    interpolate(document, {"V": "v"})

    assert document == {"a": ["${V}"], "b": {"c": "${V}"}}


# -- escapes and literal dollars ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("written", "environ", "expected"),
    [
        ("$${HOME}", {"HOME": "/root"}, "${HOME}"),
        ("$$", {}, "$"),
        ("a$$$$b", {}, "a$$b"),
        ("$$$${V}", {"V": "v"}, "$${V}"),
        ("$$${V}", {"V": "v"}, "$v"),
        ("^access\\.log$", {}, "^access\\.log$"),
        ("$remote_addr $V", {"V": "v"}, "$remote_addr $V"),
        ("cost: 5$", {}, "cost: 5$"),
        ("${A}${B}", {"A": "1", "B": "2"}, "12"),
        ("${A:-x}-${B:-y}", {"B": "2"}, "x-2"),
        ("${V:-a:-b}", {}, "a:-b"),
        ("${V}", {"V": "${OTHER}"}, "${OTHER}"),  # a value is never interpolated again
        ("${V}", {"V": "$$"}, "$$"),
    ],
)
def test_should_follow_the_reference_syntax(
    written: str, environ: dict[str, str], expected: str
) -> None:
    outcome = interpolate({"key": written}, environ)

    assert outcome.problems == []
    assert outcome.document == {"key": expected}


def test_should_load_an_escaped_dollar_from_a_file(tmp_path: Path) -> None:
    path = write(tmp_path, sources=[{**SOURCE, "time_field": "cost$$5"}])

    assert load(path).sources[0].time_field == "cost$5"


# -- errors ------------------------------------------------------------------------------------


def test_should_name_variable_key_and_file_on_one_line_when_a_variable_is_unset(
    tmp_path: Path,
) -> None:
    path = write(tmp_path, metastore={"url": "postgresql+psycopg://sluice:${DB_PASSWORD}@db/s"})

    error = refused(path)

    assert error.path == str(path.resolve())
    assert error.problems == [
        "metastore.url: environment variable DB_PASSWORD is not set "
        "(write ${DB_PASSWORD:-default} to give a default)"
    ]
    assert str(error) == f"invalid pipeline config {path.resolve()}: {error.problems[0]}"
    assert "\n" not in str(error)


def test_should_give_list_positions_in_the_key_path(tmp_path: Path) -> None:
    source = {**SOURCE, "paths": ["a.log", "${LOG_DIR}/b.log"]}
    path = write(tmp_path, sources=[source])

    assert refused(path).problems == [
        "sources.0.paths.1: environment variable LOG_DIR is not set "
        "(write ${LOG_DIR:-default} to give a default)"
    ]


def test_should_report_every_unset_variable_at_once(tmp_path: Path) -> None:
    path = write(tmp_path, data_dir="${A}", schedule="${B}/${A}")

    problems = refused(path).problems

    assert [p.split(":")[0] for p in problems] == ["data_dir", "schedule", "schedule"]
    assert "variable A " in problems[0] and "variable B " in problems[1]


@pytest.mark.parametrize(
    ("written", "message"),
    [
        ("${}", "'${}' is not a variable reference"),
        ("${1ABC}", "'${1ABC}' is not a variable reference"),
        ("${A B}", "'${A B}' is not a variable reference"),
        ("${A:=x}", "'${A:=x}' is not a variable reference"),
        ("${A", "'${' without a closing '}'"),
        ("x ${A:-${B}}", "the default of ${A} holds another reference"),
    ],
)
def test_should_refuse_a_malformed_reference(tmp_path: Path, written: str, message: str) -> None:
    path = write(tmp_path, collector={"host": written})

    (problem,) = refused(path, A="a", B="b").problems

    assert problem.startswith("collector.host: ")
    assert message in problem


def test_should_substitute_before_rejecting_unknown_keys(tmp_path: Path) -> None:
    path = write_text(
        tmp_path, 'name: web_access\nsources: [{paths: [a], format: raw}]\nx: "${V}"\n'
    )

    assert refused(path, V="v").problems == ["x: unknown key"]


# -- secrets never printed ---------------------------------------------------------------------


def test_should_hide_a_secret_variable_in_a_validation_error(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        sinks={"lake": {"type": "handoff"}, "audit": {"type": "sql", "url": "${AUDIT_TOKEN}"}},
    )

    error = refused(path, AUDIT_TOKEN="mysql://t0ps3cret")

    assert "t0ps3cret" not in str(error)
    assert "sinks.audit.sql.url" in str(error)
    assert "(got '***')" in str(error)


def test_should_hide_url_passwords_in_a_validation_error(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        sinks={"lake": {"type": "handoff"}, "out": {"type": "http", "url": "ftp://u:pw1@h/x"}},
    )

    error = refused(path)

    assert "pw1" not in str(error)
    assert "ftp://u:***@h/x" in str(error)


def test_should_mask_the_values_of_secret_variables_only(tmp_path: Path) -> None:
    headers = {"Authorization": "Bearer ${API_TOKEN}", "X-Team": "${TEAM}"}
    path = write(
        tmp_path,
        metastore={"url": "postgresql+psycopg://sluice:${PG_PASSWORD:-changeme}@db/sluice"},
        sinks={
            "lake": {"type": "handoff"},
            "out": {"type": "http", "url": "https://logs/in?key=${INGEST_KEY}", "headers": headers},
        },
    )

    config = load(path, API_TOKEN="tok-123", TEAM="web", INGEST_KEY="k-9")

    out = config.sinks["out"]
    assert isinstance(out, HttpSinkConfig)
    assert out.headers["Authorization"] == "Bearer tok-123"  # the config holds the real value
    assert config.masked(out.headers["Authorization"]) == "Bearer ***"
    assert config.masked(out.url) == "https://logs/in?key=***"
    assert config.masked(out.headers["X-Team"]) == "web"
    assert config.masked(config.metastore_url) == "postgresql+psycopg://sluice:***@db/sluice"
    assert "changeme" not in config.masked("default was changeme")


def test_should_keep_the_mask_through_copies(tmp_path: Path) -> None:
    path = write(tmp_path, collector={"host": "${NODE_SECRET}"})

    config = load(path, NODE_SECRET="s-1").model_copy(update={"priority": 3})

    assert config.masked("host s-1") == "host ***"


# -- YAML aliases ------------------------------------------------------------------------------


def test_should_replace_in_an_aliased_value_once_and_keep_it_shared() -> None:
    shared = ["${LOG_DIR}/a.log"]
    document = {"x": shared, "y": shared}

    outcome = interpolate(document, {"LOG_DIR": "/logs"})

    assert outcome.document == {"x": ["/logs/a.log"], "y": ["/logs/a.log"]}
    assert outcome.document["x"] is outcome.document["y"]


def test_should_walk_an_alias_bomb_in_the_time_its_text_takes() -> None:
    levels = ["a: &a [" + ", ".join(['"${X}"'] * 10) + "]"]
    for previous, name in zip("abcdefgh", "bcdefghi", strict=True):
        levels.append(f"{name}: &{name} [" + ", ".join([f"*{previous}"] * 10) + "]")
    document = yaml.safe_load("\n".join(levels))  # 10**9 strings once expanded

    outcome = interpolate(document, {"X": "x"})

    assert outcome.document["i"][9][9][9][9][9][9][9][9][0] == "x"


def test_should_survive_a_recursive_alias() -> None:
    document = yaml.safe_load("a: &a [1, *a]")

    outcome = interpolate(document, {})

    assert outcome.document["a"][1] is outcome.document["a"]
