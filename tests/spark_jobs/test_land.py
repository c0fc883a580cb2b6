"""The landing job's entry point: its arguments, ``main``, spark-submit of the file, and the
archive it is shipped in."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlparse

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession

from pipeline_core.config import METASTORE_POOLING_ENV, MetastorePooling
from pipeline_core.lake import LakeLocation, LandingMode, open_lake
from pipeline_core.landing import (
    METASTORE_URL_ENV,
    LandingInput,
    java_functions_jar,
    landing_job_spec,
    spark_jobs_archive,
)
from pipeline_core.staging_contract import checkpoint_dir
from pipeline_core.testing import table_rows
from spark_jobs import land as entry_point
from spark_jobs.land import main, parse_args
from spark_jobs.landing import CheckpointInput
from tests.spark_jobs.support import LINES_PER_HOST, spark_submit_landing, stage
from tests.support.lake import snapshot_operations
from tests.support.pipelines import load

REPO = Path(__file__).resolve().parents[2]
TABLES = ("access", "app", "misc", "_rejects")
REQUIRED = ["--checkpoint", "/c", "--lake", "/lake", "--namespace", "n", "--landing-id", "r"]


def test_arguments_name_each_checkpoint_with_the_hosts_to_land() -> None:
    args = parse_args(
        [
            "--checkpoint", "/staging/web_access/00000003=web-1,web-2",
            "--checkpoint", "/staging/web_access/00000004",
            "--checkpoint", "/staging/web_access/00000005=",
            "--lake", "/lake", "--namespace", "web", "--landing-id", "run-1",
        ]
    )  # fmt: skip

    assert args.checkpoint == [
        CheckpointInput("/staging/web_access/00000003", ("web-1", "web-2")),
        CheckpointInput("/staging/web_access/00000004", None),
        CheckpointInput("/staging/web_access/00000005", ()),
    ]
    assert (args.lake, args.namespace, args.landing_id) == ("/lake", "web", "run-1")
    assert (args.mode, args.shuffle_partitions) == ("append", None)
    assert parse_args([*REQUIRED, "--mode", "replace"]).mode == "replace"


def test_arguments_name_checkpoints_in_an_object_store_with_their_options() -> None:
    args = parse_args(
        [
            "--checkpoint", "s3://logs/staging/web_access/00000003=web-1,web-2",
            "--checkpoint", "s3://logs/staging/web_access/00000004?endpoint_override=http://s3:9000",
            "--checkpoint", "s3://logs/staging/web_access/00000005=web-1?region=eu-west-1",
            "--lake", "/lake", "--namespace", "web", "--landing-id", "run-1",
        ]
    )  # fmt: skip

    assert args.checkpoint == [
        CheckpointInput("s3://logs/staging/web_access/00000003", ("web-1", "web-2")),
        CheckpointInput("s3://logs/staging/web_access/00000004?endpoint_override=http://s3:9000"),
        CheckpointInput("s3://logs/staging/web_access/00000005?region=eu-west-1", ("web-1",)),
    ]


def test_the_landing_spec_names_checkpoints_staged_in_an_object_store_by_url(
    tmp_path: Path,
) -> None:
    staging = "s3://logs/staging?region=eu-west-1"
    config = load(tmp_path, f"sqlite:///{tmp_path / 'sluice.db'}", handoff={"staging": staging})

    spec = landing_job_spec(config, [LandingInput(3, ("web-1",)), LandingInput(4)], "run-7")
    args = parse_args(spec.application_args)

    assert args.checkpoint == [
        CheckpointInput(f"s3://logs/staging/{config.name}/00000003?region=eu-west-1", ("web-1",)),
        CheckpointInput(f"s3://logs/staging/{config.name}/00000004?region=eu-west-1", None),
    ]
    assert Path(args.lake) == config.lake_dir


@pytest.mark.parametrize(
    "argv",
    [
        REQUIRED[2:],  # no checkpoint
        REQUIRED[:-2],  # no landing id
        [*REQUIRED, "--mode", "overwrite"],
    ],
)
def test_arguments_that_are_missing_or_unknown_are_refused(argv: list[str]) -> None:
    with pytest.raises(SystemExit):
        parse_args(argv)


def test_the_landing_specs_arguments_parse_back_into_its_checkpoints(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'sluice.db'}"
    config = load(tmp_path, url)
    inputs = [LandingInput(3, ("web-2", "web-1")), LandingInput(4), LandingInput(5, ())]

    spec = landing_job_spec(config, inputs, "run-7", LandingMode.REPLACE)
    args = parse_args(spec.application_args)

    folder = config.staging_dir
    assert args.checkpoint == [
        CheckpointInput(str(checkpoint_dir(folder, config.name, 3)), ("web-1", "web-2")),
        CheckpointInput(str(checkpoint_dir(folder, config.name, 4)), None),
        CheckpointInput(str(checkpoint_dir(folder, config.name, 5)), ()),
    ]
    assert (Path(args.lake), args.namespace) == (config.lake_dir, config.lake_namespace)
    assert (args.landing_id, args.mode) == ("run-7", "replace")
    assert spec.application == str(REPO / "spark_jobs" / "land.py")
    assert spec.env_vars[entry_point.METASTORE_URL_ENV] == url
    assert METASTORE_URL_ENV == entry_point.METASTORE_URL_ENV
    assert spec.env_vars[METASTORE_POOLING_ENV] == "none"


def test_the_landing_job_reaches_its_catalog_as_the_config_says(tmp_path: Path) -> None:
    config = load(
        tmp_path,
        "postgresql+psycopg://sluice@pgbouncer:6432/sluice",
        metastore={
            "url": "postgresql+psycopg://sluice@pgbouncer:6432/sluice",
            "pooling": "transaction",
        },
        landing_jar=False,
    )
    spec = landing_job_spec(config, [LandingInput(3)], "run-1", LandingMode.APPEND)

    assert entry_point.metastore_pooling(spec.env_vars) is MetastorePooling.TRANSACTION
    assert entry_point.metastore_pooling({}) is MetastorePooling.NONE
    with pytest.raises(SystemExit, match=METASTORE_POOLING_ENV):
        entry_point.metastore_pooling({METASTORE_POOLING_ENV: "statement"})


def test_main_needs_the_metastore_url_in_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(entry_point.METASTORE_URL_ENV, raising=False)

    with pytest.raises(SystemExit, match=entry_point.METASTORE_URL_ENV):
        main(REQUIRED)


@pytest.mark.spark
@pytest.mark.sqlite_pass  # the metastore only as the lake's catalog
def test_main_lands_every_checkpoint_once_and_prints_the_summary(
    spark: SparkSession,
    lake: LakeLocation,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    staging = tmp_path / "staging"
    eleven, twelve = stage(staging, 11), stage(staging, 12, hosts=("web-1",))
    monkeypatch.setenv(entry_point.METASTORE_URL_ENV, lake.catalog_url)
    monkeypatch.setattr(SparkSession, "stop", lambda self: None)  # the tests' session stays up

    main(
        [
            "--checkpoint", f"{eleven}=web-2",
            "--checkpoint", str(twelve),
            "--checkpoint", str(twelve),  # named twice, landed once
            "--lake", str(lake.warehouse), "--namespace", lake.namespace,
            "--landing-id", "run-1",
        ]
    )  # fmt: skip

    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert (summary["landing_id"], summary["mode"]) == ("run-1", "append")
    assert [(c["checkpoint_id"], c["batches"]) for c in summary["checkpoints"]] == [
        (11, 1),
        (12, 1),
    ]
    for table in TABLES:
        assert summary["tables"][table]["committed"] == [11, 12]
        assert snapshot_operations(lake, table) == [("append", "11,12")]
    for checkpoint in summary["checkpoints"]:
        for table, rows in checkpoint["rows"].items():
            assert table_rows(lake, table, checkpoint["checkpoint_id"]).num_rows == rows
    assert set(table_rows(lake, "access", 11).column("host").to_pylist()) == {"web-2"}


@pytest.mark.slow
@pytest.mark.sqlite_pass  # the metastore only as the lake's catalog
def test_spark_submit_lands_a_checkpoint(lake: LakeLocation, tmp_path: Path) -> None:
    staged = stage(tmp_path / "staging", 11)
    jar = java_functions_jar(tmp_path / "jars")
    assert jar is not None
    env = {
        **os.environ,
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
        entry_point.METASTORE_URL_ENV: lake.catalog_url,
    }
    command = spark_submit_landing(staged, lake, jar, "run-1")

    done = subprocess.run(
        command, cwd=REPO, env=env, capture_output=True, text=True, timeout=240, check=False
    )

    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    assert (summary["segment_reader"], summary["nginx_scanner"]) == ("jvm", "jvm")
    assert summary["pattern_matcher"] == "jvm"
    (checkpoint,) = summary["checkpoints"]
    assert checkpoint["input_lines"] == 2 * LINES_PER_HOST
    assert sum(checkpoint["rows"].values()) + sum(checkpoint["rejects"].values()) == (
        2 * LINES_PER_HOST
    )
    for table in TABLES:
        assert snapshot_operations(lake, table) == [("append", "11")]
    assert table_rows(lake, "access", 11).num_rows == checkpoint["rows"]["access"]
    with open_lake(lake) as catalog:
        access = catalog.load("access")
        assert access is not None
        files = access.inspect.files().column("file_path").to_pylist()
    schemas = [pq.read_schema(urlparse(path).path) for path in files]
    assert {schema.field("event_time").type for schema in schemas} == {pa.timestamp("us", tz="UTC")}


def imported_from(path: Path, code: str) -> list[tuple[str, str]]:
    """Run ``code`` in a fresh interpreter with ``path`` first on its import path; the modules
    of Sluice it imported, each with the file it came from."""
    script = (
        f"import sys\nsys.path.insert(0, {str(path)!r})\n{code}\n"
        "import json\n"
        "print(json.dumps(sorted((name, getattr(module, '__file__', '') or '')"
        " for name, module in sys.modules.items()"
        " if name.split('.')[0] in ('pipeline_core', 'spark_jobs'))))"
    )
    done = subprocess.run(
        [sys.executable, "-I", "-c", script],
        cwd=path.parent,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return [(name, file) for name, file in json.loads(done.stdout.strip().splitlines()[-1])]


def test_the_shipped_archive_holds_everything_the_job_imports_of_sluice(tmp_path: Path) -> None:
    archive = spark_jobs_archive(tmp_path)

    modules = imported_from(archive, "import spark_jobs.land")

    names = {name for name, _ in modules}
    assert names >= {
        "spark_jobs.land",
        "spark_jobs.landing",
        "pipeline_core.staging_contract",
        "pipeline_core.lake",
    }
    # Of pipeline_core, only the packages the archive ships: never the config, metastore...
    shipped = (
        "pipeline_core.staging_contract",
        "pipeline_core.lake",
        "pipeline_core.storage",
        "pipeline_core.formats",
    )
    assert [
        name
        for name in names
        if name.startswith("pipeline_core")
        and name
        not in (
            "pipeline_core",
            "pipeline_core._compat",
            "pipeline_core._landing_mode",
            "pipeline_core._metastore_pooling",
            "pipeline_core.errors",
        )
        and not name.startswith(shipped)
    ] == []
    assert [name for name, file in modules if not file.startswith(str(archive))] == []


def test_the_executors_module_imports_nothing_of_pipeline_core() -> None:
    modules = imported_from(REPO, "import spark_jobs.staging")

    assert [name for name, _ in modules] == [
        "spark_jobs",
        "spark_jobs.jvm_functions",
        "spark_jobs.jvm_lines",
        "spark_jobs.part_files",
        "spark_jobs.segment_split",
        "spark_jobs.session",
        "spark_jobs.staging",
    ]
