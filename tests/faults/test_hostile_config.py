"""Malformed or hostile pipeline configs: ``sluice collect`` answers with one clear message
naming the file and the key, and nothing starts half-way (no metastore rows, no staging).

What the loader says about each kind of mistake (unknown keys at every level, wrong types and
enum values, missing keys, a file that is not YAML or not a mapping, several problems at once)
is tested in ``tests/pipeline_core/config/test_loader.py``; ``tests/pipeline_core/test_cli.py``
checks that ``sluice validate`` exits 2 naming the bad key. This module checks what happens
around that when a collector is asked to start, and the inputs a hostile file could use.

The config has no notion of allowed roots: source globs, ``data_dir``, the staging folder and
the lake may be anywhere the process can reach, relative paths resolving against the config
file's folder. What cannot escape is what Sluice derives paths from: pipeline and source names
(``[a-z][a-z0-9_]*``).
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
import yaml

from pipeline_core import cli
from pipeline_core.config import METASTORE_URL_ENV, load_pipeline_config
from pipeline_core.errors import ConfigError

Document = dict[str, Any]
METASTORE_TABLES = ("sluice_checkpoints", "sluice_files", "sluice_batches", "sluice_leases")


@pytest.fixture(autouse=True)
def quiet_cli(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(METASTORE_URL_ENV, raising=False)
    monkeypatch.setenv("AIRFLOW__LOGGING__LOGGING_LEVEL", "WARNING")  # main() would set it


def document(metastore_url: str | None = None, **extra: Any) -> Document:
    doc: Document = {
        "name": "web_access",
        "sources": [{"name": "access", "paths": ["logs/*.log"], "format": "raw"}],
        "data_dir": "data",
        "collector": {"host": "test-host", "lease_seconds": 2.0},
        **extra,
    }
    if metastore_url is not None:
        doc["metastore"] = {"url": metastore_url}
    return doc


def write(folder: Path, doc: Document | str) -> Path:
    (folder / "logs").mkdir(parents=True, exist_ok=True)
    (folder / "logs" / "access.log").write_bytes(b"a line\n")
    path = folder / "pipeline.yaml"
    path.write_text(doc if isinstance(doc, str) else yaml.safe_dump(doc))
    return path


def run_collect(path: Path, once: bool, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    returncode = cli.main(["collect", str(path), *(["--once"] if once else [])])
    return returncode, capsys.readouterr().err


def metastore_rows(url: str) -> dict[str, int]:
    """Rows in Sluice's tables (none when the database or its schema was never created)."""
    parsed = sa.make_url(url)
    if parsed.get_backend_name() == "sqlite" and not Path(parsed.database or "").exists():
        return dict.fromkeys(METASTORE_TABLES, 0)
    engine = sa.create_engine(url)
    try:
        with engine.connect() as connection:
            present = set(sa.inspect(connection).get_table_names())
            return {
                table: connection.execute(sa.text(f"SELECT count(*) FROM {table}")).scalar_one()
                if table in present
                else 0
                for table in METASTORE_TABLES
            }
    finally:
        engine.dispose()


def nothing_started(folder: Path, url: str) -> None:
    assert not (folder / "data" / "staging").exists()
    assert metastore_rows(url) == dict.fromkeys(METASTORE_TABLES, 0)


def set_key(doc: Document, dotted: str, value: Any) -> Document:
    target: Any = doc
    *parents, last = dotted.split(".")
    for key in parents:
        target = target[int(key)] if isinstance(target, list) else target.setdefault(key, {})
    target[int(last) if isinstance(target, list) else last] = value
    return doc


MALFORMED: list[tuple[str, str, Any]] = [
    ("collector.lease_secs", "collector.lease_secs", 2),  # a typo
    ("collector.lease_seconds", "collector.lease_seconds", "soon"),
    ("sources.0.paths", "sources.0.paths", "logs/*.log"),  # a string, not a list
    ("sources", "sources", 42),
    ("handoff.max_part_bytes", "handoff.max_part_bytes", -1),
    ("sources.0.format", "sources.0.format", None),
    ("name", "name", "../../etc"),  # would name staging/<name> and the DAG
    ("sources.0.name", "sources.0.name", "../outside"),  # would name lake/<source>
]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("once", [True, False], ids=["once", "tailing"])
@pytest.mark.parametrize(("key", "dotted", "value"), MALFORMED, ids=[m[0] for m in MALFORMED])
def test_collect_refuses_a_malformed_config_naming_the_file_and_key_and_starts_nothing(
    tmp_path: Path,
    metastore_url: str,
    capsys: pytest.CaptureFixture[str],
    key: str,
    dotted: str,
    value: Any,
    once: bool,
) -> None:
    path = write(tmp_path, set_key(document(metastore_url), dotted, value))

    returncode, err = run_collect(path, once, capsys)

    assert returncode == 2
    assert err.startswith(f"sluice: error: invalid pipeline config {path.resolve()}:")
    assert re.search(rf"(: |\n  ){re.escape(key)}: ", err), err  # one problem: one line
    assert "Traceback" not in err
    nothing_started(tmp_path, metastore_url)


@pytest.mark.timeout(60)
def test_a_yaml_file_asking_to_run_code_is_refused_as_not_yaml(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    marker = tmp_path / "ran"
    path = write(tmp_path, f'name: !!python/object/apply:os.system ["touch {marker}"]\n')

    returncode, err = run_collect(path, True, capsys)

    assert returncode == 2
    assert "not valid YAML" in err
    assert not marker.exists()


@pytest.mark.timeout(60)
def test_a_yaml_alias_bomb_gets_a_short_error_quickly(tmp_path: Path) -> None:
    levels = ["a: &a [" + ", ".join(['"xxxxxxxxxx"'] * 10) + "]"]
    for previous, name in zip("abcde", "bcdef", strict=True):
        levels.append(f"{name}: &{name} [" + ", ".join([f"*{previous}"] * 10) + "]")
    text = "\n".join(levels) + "\nname: *f\nsources: [{paths: [x], format: raw}]\n"
    path = tmp_path / "bomb.yaml"
    path.write_text(text)
    started = time.monotonic()

    with pytest.raises(ConfigError) as refused:
        load_pipeline_config(path)

    assert time.monotonic() - started < 5
    assert len(str(refused.value)) < 10 * len(text), f"{len(str(refused.value))} characters"


def test_source_globs_outside_the_config_folder_are_taken_as_written(tmp_path: Path) -> None:
    path = write(
        tmp_path / "conf",
        document(
            sources=[
                {"name": "up", "paths": ["../elsewhere/*.log"], "format": "raw"},
                {"name": "system", "paths": ["/var/log/**/*.log"], "format": "raw"},
            ]
        ),
    )

    config = load_pipeline_config(path)

    assert config.sources[0].paths == [
        str(tmp_path.resolve() / "conf" / ".." / "elsewhere" / "*.log")
    ]
    assert config.sources[1].paths == ["/var/log/**/*.log"]


def file_in_the_way(folder: Path) -> Path:
    """A regular file where a folder must be created: ``mkdir`` below it fails even for root
    (which would write into a folder whatever its mode)."""
    blocker = folder / "blocker"
    blocker.write_text("a file, not a folder\n")
    return blocker


@pytest.mark.timeout(60)
def test_an_unwritable_staging_folder_is_refused_before_anything_starts(
    tmp_path: Path, metastore_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    staging = file_in_the_way(tmp_path) / "staging"
    path = write(tmp_path, document(metastore_url, handoff={"staging_dir": str(staging)}))

    returncode, err = run_collect(path, True, capsys)

    assert returncode == 2
    assert "handoff.staging_dir" in err
    assert "Traceback" not in err
    nothing_started(tmp_path, metastore_url)


@pytest.mark.timeout(60)
def test_an_unusable_data_dir_is_a_one_line_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = document(data_dir=str(file_in_the_way(tmp_path) / "data"))
    path = write(tmp_path, doc)

    returncode, err = run_collect(path, True, capsys)

    assert returncode == 3  # ExitCode.UNREACHABLE
    assert err.startswith("sluice: error: cannot open the metastore")
