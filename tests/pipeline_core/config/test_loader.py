"""Loading a pipeline config file: defaults, path resolution, the URL override, error messages."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from pipeline_core.config import (
    METASTORE_POOLING_ENV,
    METASTORE_URL_ENV,
    MetastorePooling,
    PipelineConfig,
    SourceFormat,
    StartPosition,
    load_pipeline_config,
)
from pipeline_core.errors import ConfigError

SOURCE: dict[str, Any] = {"name": "access", "paths": ["logs/access.log*"], "format": "raw"}


@pytest.fixture(autouse=True)
def no_metastore_override(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(METASTORE_URL_ENV, raising=False)
    monkeypatch.delenv(METASTORE_POOLING_ENV, raising=False)


def write(folder: Path, document: object, name: str = "pipeline.yaml") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(yaml.safe_dump(document))
    return path


def minimal(**extra: Any) -> dict[str, Any]:
    return {"name": "web_access", "sources": [dict(SOURCE)], **extra}


def config_error(path: Path) -> ConfigError:
    with pytest.raises(ConfigError) as caught:
        load_pipeline_config(path)
    return caught.value


# -- valid configs -----------------------------------------------------------------------------


def test_should_load_a_minimal_config_with_defaults(tmp_path: Path) -> None:
    path = write(tmp_path, minimal())

    config = load_pipeline_config(path)

    assert isinstance(config, PipelineConfig)
    assert config.name == "web_access"
    assert config.config_path == path.resolve()
    (source,) = config.sources
    assert source.format is SourceFormat.RAW
    assert source.start_at is StartPosition.BEGINNING
    assert source.exclude == []
    assert config.collector.ring_size == 8
    assert config.collector.signature_bytes == 1024
    assert config.schedule == "*/5 * * * *"


def test_should_put_staging_lake_and_metastore_under_the_data_dir_by_default(
    tmp_path: Path,
) -> None:
    config = load_pipeline_config(write(tmp_path, minimal()))

    data_dir = tmp_path.resolve() / "data"
    assert config.data_dir == data_dir
    assert config.staging_dir == data_dir / "staging"
    assert config.lake_dir == data_dir / "lake"
    assert config.metastore_url == f"sqlite:///{data_dir / 'sluice.db'}"


def test_should_resolve_relative_paths_against_the_config_files_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "conf"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    document = minimal(
        data_dir="state",
        handoff={"staging_dir": "stage"},
        lake={"path": "../lake"},
        metastore={"url": "sqlite:///db/sluice.db"},
    )
    document["sources"][0]["exclude"] = ["logs/*.gz"]

    config = load_pipeline_config(write(folder, document))

    base = folder.resolve()
    assert config.data_dir == base / "state"
    assert config.sources[0].paths == [str(base / "logs" / "access.log*")]
    assert config.sources[0].exclude == [str(base / "logs" / "*.gz")]
    assert config.staging_dir == base / "stage"
    assert config.lake_dir.resolve() == tmp_path.resolve() / "lake"
    assert config.metastore_url == f"sqlite:///{base / 'db' / 'sluice.db'}"


def test_should_keep_absolute_paths_and_urls_as_written(tmp_path: Path) -> None:
    absolute = tmp_path / "absolute"
    url = f"sqlite:///{tmp_path / 'abs.db'}"
    document = minimal(data_dir=str(absolute), metastore={"url": url})
    document["sources"][0]["paths"] = [str(absolute / "*.log")]

    config = load_pipeline_config(write(tmp_path / "conf", document))

    assert config.data_dir == absolute
    assert config.sources[0].paths == [str(absolute / "*.log")]
    assert config.metastore_url == url


def test_should_exclude_by_file_name_a_pattern_without_a_separator(tmp_path: Path) -> None:
    from pipeline_core.source import find_files

    logs = tmp_path / "var" / "log" / "nginx"
    for name in ("access.log", "access.log.1", "access.log.2.gz"):
        (logs / name).parent.mkdir(parents=True, exist_ok=True)
        (logs / name).write_bytes(b"a line\n")
    document = minimal()
    document["sources"][0].update(paths=[str(logs / "access.log*")], exclude=["*.gz", "old/*"])

    config = load_pipeline_config(write(tmp_path / "etc" / "sluice", document))

    assert config.sources[0].exclude == ["*.gz", str(tmp_path.resolve() / "etc/sluice/old/*")]
    found = sorted(path for path, _ in find_files(config.sources[0]).values())
    assert found == [str(logs / "access.log"), str(logs / "access.log.1")]


def test_should_resolve_the_folders_symlinks_may_lead_into_against_the_config_files_folder(
    tmp_path: Path,
) -> None:
    document = minimal()
    document["sources"][0].update(follow_symlinks=True, symlink_targets=["pods", "/var/lib/x"])

    config = load_pipeline_config(write(tmp_path / "conf", document))

    (source,) = config.sources
    assert source.follow_symlinks is True
    assert source.symlink_targets == [str(tmp_path.resolve() / "conf" / "pods"), "/var/lib/x"]
    assert load_pipeline_config(write(tmp_path, minimal())).sources[0].follow_symlinks is False


def test_should_let_the_environment_override_the_metastore_url(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    override = "postgresql+psycopg://sluice@db.example:5432/sluice"
    monkeypatch.setenv(METASTORE_URL_ENV, override)
    path = write(tmp_path, minimal(metastore={"url": "sqlite:///written.db"}))

    assert load_pipeline_config(path).metastore_url == override


def test_should_let_the_environment_set_a_url_the_file_leaves_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(METASTORE_URL_ENV, "sqlite:///from-env.db")

    config = load_pipeline_config(write(tmp_path, minimal()))

    assert config.metastore_url == f"sqlite:///{tmp_path.resolve() / 'from-env.db'}"


def test_should_say_the_metastore_is_reached_directly_unless_told_of_a_pooler(
    tmp_path: Path,
) -> None:
    assert load_pipeline_config(write(tmp_path, minimal())).metastore.pooling is (
        MetastorePooling.NONE
    )
    pooled = minimal(metastore={"url": "postgresql+psycopg://db/s", "pooling": "transaction"})

    assert load_pipeline_config(write(tmp_path, pooled)).metastore.pooling is (
        MetastorePooling.TRANSACTION
    )


def test_should_let_the_environment_override_the_metastore_pooling(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(tmp_path, minimal(metastore={"pooling": "none"}))
    monkeypatch.setenv(METASTORE_POOLING_ENV, "transaction")

    assert load_pipeline_config(path).metastore.pooling is MetastorePooling.TRANSACTION

    monkeypatch.setenv(METASTORE_POOLING_ENV, "statement")
    error = config_error(path)
    assert error.problems == [
        "$SLUICE_METASTORE_POOLING: expected one of none, transaction (got 'statement')"
    ]


def test_should_name_the_poolings_a_file_may_give(tmp_path: Path) -> None:
    error = config_error(write(tmp_path, minimal(metastore={"pooling": "session"})))

    assert any(problem.startswith("metastore.pooling: ") for problem in error.problems)


# -- invalid configs: the file, the key, what was expected ------------------------------------


def test_should_reject_an_unknown_top_level_key(tmp_path: Path) -> None:
    path = write(tmp_path, minimal(colector={"host": "a"}))

    error = config_error(path)

    assert str(path.resolve()) in str(error)
    assert error.problems == ["colector: unknown key"]


@pytest.mark.parametrize(
    ("section", "key"),
    [("collector", "ring_sise"), ("handoff", "max_part_mb"), ("metastore", "uri")],
)
def test_should_reject_an_unknown_nested_key(tmp_path: Path, section: str, key: str) -> None:
    path = write(tmp_path, minimal(**{section: {key: 1}}))

    error = config_error(path)

    assert str(path.resolve()) in str(error)
    assert error.problems == [f"{section}.{key}: unknown key"]


def test_should_reject_an_unknown_key_in_a_source(tmp_path: Path) -> None:
    document = minimal()
    document["sources"][0]["glob"] = "*.log"

    error = config_error(write(tmp_path, document))

    assert error.problems == ["sources.0.glob: unknown key"]


def test_should_name_the_allowed_values_of_an_enum(tmp_path: Path) -> None:
    document = minimal()
    document["sources"][0]["format"] = "apache"
    path = write(tmp_path, document)

    error = config_error(path)

    (problem,) = error.problems
    assert problem.startswith("sources.0.format: ")
    for allowed in ("nginx_combined", "json_lines", "raw"):
        assert allowed in problem
    assert "'apache'" in problem
    assert str(path.resolve()) in str(error)


def test_should_report_missing_sources(tmp_path: Path) -> None:
    path = write(tmp_path, {"name": "web_access"})

    error = config_error(path)

    assert str(path.resolve()) in str(error)
    assert error.problems == ["sources: Field required"]


def test_should_reject_an_empty_source_list(tmp_path: Path) -> None:
    error = config_error(write(tmp_path, minimal(sources=[])))

    (problem,) = error.problems
    assert problem.startswith("sources: ")
    assert "at least 1" in problem


def test_should_reject_duplicate_source_names(tmp_path: Path) -> None:
    path = write(tmp_path, minimal(sources=[dict(SOURCE), dict(SOURCE)]))

    error = config_error(path)

    assert str(path.resolve()) in str(error)
    (problem,) = error.problems
    assert "source names must be unique" in problem
    assert "repeated: access" in problem


def test_should_name_the_sources_key_for_duplicate_source_names(tmp_path: Path) -> None:
    error = config_error(write(tmp_path, minimal(sources=[dict(SOURCE), dict(SOURCE)])))

    (problem,) = error.problems
    assert problem.startswith("sources")


@pytest.mark.parametrize("ring_size", [3, 100, 1000])
def test_should_reject_a_ring_size_that_is_not_a_power_of_two(
    tmp_path: Path, ring_size: int
) -> None:
    path = write(tmp_path, minimal(collector={"ring_size": ring_size}))

    error = config_error(path)

    assert str(path.resolve()) in str(error)
    assert error.problems == [
        f"collector.ring_size: Value error, must be a power of two (got {ring_size})"
    ]


def test_should_accept_a_power_of_two_ring_size(tmp_path: Path) -> None:
    config = load_pipeline_config(write(tmp_path, minimal(collector={"ring_size": 1024})))

    assert config.collector.ring_size == 1024


def test_should_report_every_problem_of_a_file_at_once(tmp_path: Path) -> None:
    document = minimal(collector={"ring_size": 6}, extra=True)
    document["sources"][0]["format"] = "csv"

    error = config_error(write(tmp_path, document))

    keys = sorted(problem.split(":", 1)[0] for problem in error.problems)
    assert keys == ["collector.ring_size", "extra", "sources.0.format"]


def test_should_reject_a_file_that_is_not_yaml(tmp_path: Path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text("name: [web_access\nsources: {\n")

    error = config_error(path)

    assert error.path == str(path.resolve())
    assert str(path.resolve()) in str(error)
    (problem,) = error.problems
    assert problem.startswith("not valid YAML")


@pytest.mark.parametrize(
    ("text", "kind"), [("- a\n- b\n", "list"), ("just text\n", "str"), ("", "NoneType")]
)
def test_should_reject_a_top_level_that_is_not_a_mapping(
    tmp_path: Path, text: str, kind: str
) -> None:
    path = tmp_path / "pipeline.yaml"
    path.write_text(text)

    error = config_error(path)

    assert str(path.resolve()) in str(error)
    assert error.problems == [f"expected a mapping of keys at the top level, got {kind}"]


def test_should_report_a_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "absent.yaml"

    error = config_error(path)

    assert error.path == str(path.resolve())
    assert str(path.resolve()) in str(error)
    (problem,) = error.problems
    assert problem.startswith("cannot read the file")


def test_should_resolve_a_lake_warehouse_path_and_keep_a_store_url(tmp_path: Path) -> None:
    folder = tmp_path / "conf"

    local = load_pipeline_config(write(folder, minimal(lake={"warehouse": "warehouse"})))
    stored = load_pipeline_config(
        write(folder, minimal(lake={"warehouse": "s3://bucket/lake"}), "stored.yaml")
    )

    assert local.lake_dir == folder.resolve() / "warehouse"
    assert local.lake_location.is_local
    assert local.lake_warehouse == folder.resolve() / "warehouse"
    assert stored.lake_location.url == "s3://bucket/lake"
    assert stored.lake_warehouse == "s3://bucket/lake"
    assert not stored.lake_location.is_local


def test_should_refuse_a_lake_warehouse_and_path_together(tmp_path: Path) -> None:
    path = write(tmp_path, minimal(lake={"warehouse": "s3://bucket/lake", "path": "lake"}))

    assert "give lake.warehouse or lake.path, not both" in str(config_error(path))
