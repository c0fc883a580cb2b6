"""``sluice validate``: the preflight. In-process for the report's shape, in a subprocess for
each thing a new user got wrong (the exit status and the one line saying so)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from pipeline_core.cli import ExitCode, main
from pipeline_core.testing import append
from tests.pipeline_core.cli.support import no_traceback, sluice, upgraded
from tests.support.http_server import RecordingHttpServer
from tests.support.log_programs import write_python_log
from tests.support.object_store import S3Bucket
from tests.support.pipelines import write_config

# make test runs these once, on SQLite: the metastore is not what they test, and its part in
# them runs on PostgreSQL too, in tests/pipeline_core/metastore and the system tests.
pytestmark = pytest.mark.sqlite_pass


def ready_config(tmp_path: Path, metastore_url: str, **extra: Any) -> Path:
    """A config whose glob matches a file and whose metastore is migrated."""
    append(tmp_path / "logs" / "access.log", b"one line")
    return upgraded(write_config(tmp_path, metastore_url, **extra))


def test_should_list_every_check_and_each_globs_files_for_a_ready_pipeline(
    tmp_path: Path, metastore_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = ready_config(tmp_path, metastore_url)
    capsys.readouterr()

    assert main(["validate", str(path)]) == ExitCode.OK

    out = capsys.readouterr().out
    base = tmp_path.resolve()
    assert "pipeline web_access: valid" in out
    assert f"ok           source access: 1 file matches {base / 'logs' / 'access.log*'}" in out
    assert f"{base / 'logs' / 'access.log'}  9 bytes" in out
    assert "ok           schedule: */5 * * * * (next run" in out
    assert f"ok           staging: {base / 'data' / 'staging'}" in out
    assert "ok           metastore:" in out and "at migration" in out and "(the newest)" in out
    assert "ok           lake catalog: reachable" in out


def test_should_list_the_symlinks_a_source_will_not_read(
    tmp_path: Path, metastore_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = ready_config(tmp_path, metastore_url)
    secret = tmp_path / "etc" / "shadow"
    append(secret, b"root:secret")
    logs = tmp_path.resolve() / "logs"
    (logs / "access.log.evil").symlink_to(secret)
    capsys.readouterr()

    assert main(["validate", str(path)]) == ExitCode.OK
    write_config(tmp_path, metastore_url, source={"follow_symlinks": True})
    assert main(["validate", str(path)]) == ExitCode.OK

    plain, following = capsys.readouterr().out.split("pipeline web_access  (")[1:]
    assert f"ok           source access: 1 file matches {logs / 'access.log*'}" in plain
    assert f"not read: {logs / 'access.log.evil'}: a symlink (to {secret})" in plain
    assert "follow_symlinks" in plain
    assert f"not read: {logs / 'access.log.evil'}: a symlink to {secret.resolve()}" in following
    assert f"outside {logs}" in following
    assert "root:secret" not in plain + following


def test_should_exit_2_naming_the_bad_key_of_an_invalid_config(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "web_access.yaml"
    document = {
        "name": "web_access",
        "sources": [{"name": "access", "paths": ["logs/*"], "format": "raw"}],
        "collector": {"ring_size": 100},
    }
    path.write_text(yaml.safe_dump(document))

    assert main(["validate", str(path)]) == ExitCode.INVALID

    out = capsys.readouterr().out
    assert "invalid      config:" in out
    assert "collector.ring_size" in out and "power of two" in out


def test_should_exit_2_for_a_missing_config(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["validate", str(tmp_path / "absent.yaml")]) == ExitCode.INVALID

    assert "absent.yaml" in capsys.readouterr().out


def test_should_hide_the_metastore_password_of_an_unreachable_metastore(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_config(tmp_path, "postgresql+psycopg://sluice:s3cret@127.0.0.1:9/sluice")

    assert main(["validate", str(path)]) == ExitCode.INVALID  # the glob matches nothing too

    out = capsys.readouterr().out
    assert "s3cret" not in out
    assert "unreachable  metastore: cannot reach postgresql+psycopg://sluice:***@127.0.0.1:9" in out


def test_should_validate_every_config_of_a_folder_as_json(
    tmp_path: Path, metastore_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    ready_config(tmp_path, metastore_url)
    write_config(tmp_path, metastore_url, name="other", pattern="none/*.log")
    capsys.readouterr()

    assert main(["validate", str(tmp_path), "--json"]) == ExitCode.INVALID

    document = json.loads(capsys.readouterr().out)
    assert document["exit_code"] == 2
    verdicts = {p["pipeline"]: p["valid"] for p in document["pipelines"]}
    assert verdicts == {"other": False, "web_access": True}
    [other] = [p for p in document["pipelines"] if p["pipeline"] == "other"]
    assert [c["check"] for c in other["checks"] if c["status"] == "invalid"] == ["source access"]


def test_should_ask_each_http_sink_whether_it_is_up(
    tmp_path: Path, metastore_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with RecordingHttpServer() as server:
        sinks = {"lake": {"type": "handoff"}, "web": {"type": "http", "url": server.url}}
        path = ready_config(tmp_path, metastore_url, sinks=sinks)
        capsys.readouterr()

        assert main(["validate", str(path)]) == ExitCode.OK
        server.stop()
        assert main(["validate", str(path)]) == ExitCode.UNREACHABLE

    out = capsys.readouterr().out
    assert f"ok           sink web (http): {server.url} answered HEAD with " in out
    assert f"unreachable  sink web (http): {server.url}: cannot connect" in out


# -- what a new user got wrong, through the real command -----------------------------------------


def test_should_refuse_a_schedule_that_is_not_cron(tmp_path: Path, metastore_url: str) -> None:
    path = ready_config(tmp_path, metastore_url, schedule="every five minutes")

    done = sluice("validate", str(path))

    assert done.returncode == ExitCode.INVALID, done.stderr
    assert "invalid      schedule: 'every five minutes' is not a cron expression" in done.stdout
    assert "pipeline web_access: invalid (1 of" in done.stdout
    no_traceback(done.stderr)


def test_should_refuse_a_glob_matching_no_file_unless_the_source_is_optional(
    tmp_path: Path, metastore_url: str
) -> None:
    path = upgraded(write_config(tmp_path, metastore_url, pattern="logs/*.log"))

    refused = sluice("validate", str(path))
    write_config(tmp_path, metastore_url, pattern="logs/*.log", source={"optional": True})
    allowed = sluice("validate", str(path))

    assert refused.returncode == ExitCode.INVALID
    assert f"invalid      source access: no file matches {tmp_path.resolve()}/logs/*.log" in (
        refused.stdout
    )
    assert "optional: true" in refused.stdout
    assert allowed.returncode == ExitCode.OK, allowed.stdout
    assert "no file matches" in allowed.stdout and "yet (optional)" in allowed.stdout


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("notaurl", "metastore.url: not a database URL (got 'notaurl'"),
        ("mysql://sluice:pw@db.example/sluice", "metastore.url: 'mysql' is not supported"),
    ],
    ids=["not-a-url", "mysql"],
)
def test_should_refuse_an_unusable_metastore_url_in_one_line(
    tmp_path: Path, url: str, says: str
) -> None:
    path = write_config(tmp_path, url, pattern="web_access.yaml")

    validated = sluice("validate", str(path))
    status = sluice("status", str(path))

    assert validated.returncode == ExitCode.INVALID
    assert f"invalid      metastore: {says}" in validated.stdout
    assert status.returncode == ExitCode.INVALID
    assert status.stderr.count("\n") == 1, status.stderr
    assert says in status.stderr
    no_traceback(status.stderr)


def test_should_not_create_a_metastore_that_a_typo_names(tmp_path: Path) -> None:
    path = write_config(tmp_path, "sqlite:///typo_dir/x.db", pattern="web_access.yaml")

    validated = sluice("validate", str(path))
    status = sluice("status", str(path))

    database = tmp_path.resolve() / "typo_dir" / "x.db"
    assert validated.returncode == ExitCode.NOT_MIGRATED
    assert f"not migrated metastore: there is no metastore at {database}" in validated.stdout
    assert status.returncode == ExitCode.NOT_MIGRATED
    assert status.stderr == (
        f"sluice: error: there is no metastore at {database}: run `sluice db upgrade CONFIG` "
        "to create it (or correct metastore.url)\n"
    )
    assert not database.parent.exists()


def test_should_probe_staging_in_an_object_store_and_leave_nothing_behind(
    tmp_path: Path, metastore_url: str, s3_bucket: S3Bucket, capsys: pytest.CaptureFixture[str]
) -> None:
    path = ready_config(tmp_path, metastore_url, handoff={"staging": s3_bucket.url("staging")})
    capsys.readouterr()

    assert main(["validate", str(path)]) == ExitCode.OK

    out = capsys.readouterr().out
    assert f"ok           spool: {tmp_path.resolve() / 'data' / 'spool'}" in out
    assert (
        f"ok           staging: {s3_bucket.url('staging')} (writable: a probe object written "
        "and deleted)"
    ) in out
    assert s3_bucket.keys() == []


def test_should_exit_3_naming_the_staging_bucket_that_cannot_be_written(
    tmp_path: Path, metastore_url: str, s3_bucket: S3Bucket
) -> None:
    missing = f"s3://{s3_bucket.name}-missing/staging"
    path = ready_config(tmp_path, metastore_url, handoff={"staging": missing})

    result = sluice("validate", str(path))

    assert result.returncode == ExitCode.UNREACHABLE, result.stdout + result.stderr
    assert f"unreachable  staging: cannot write a probe object in {missing}:" in result.stdout
    assert "bucket does not exist" in result.stdout
    no_traceback(result.stderr)


def test_should_exit_2_naming_a_credential_written_into_the_staging_url(tmp_path: Path) -> None:
    path = tmp_path / "web_access.yaml"
    document = {
        "name": "web_access",
        "sources": [{"name": "access", "paths": ["logs/*"], "format": "raw"}],
        "handoff": {"staging": "s3://bucket/staging?secret_key=wJalrXUtnFEMI"},
    }
    path.write_text(yaml.safe_dump(document))

    result = sluice("validate", str(path))

    assert result.returncode == ExitCode.INVALID
    assert "handoff.staging" in result.stdout and "secret_key" in result.stdout
    assert str(path) in result.stdout + result.stderr
    assert "wJalrXUtnFEMI" not in result.stdout + result.stderr


def test_should_probe_a_lake_in_an_object_store_and_leave_nothing_behind(
    tmp_path: Path, metastore_url: str, s3_bucket: S3Bucket, capsys: pytest.CaptureFixture[str]
) -> None:
    path = ready_config(tmp_path, metastore_url, lake={"warehouse": s3_bucket.url("lake")})
    capsys.readouterr()

    assert main(["validate", str(path)]) == ExitCode.OK

    out = capsys.readouterr().out
    assert (
        f"ok           lake: {s3_bucket.url('lake')} (writable: a probe object written and deleted)"
    ) in out
    assert s3_bucket.keys() == []


def test_should_exit_3_naming_the_lake_bucket_that_cannot_be_written(
    tmp_path: Path, metastore_url: str, s3_bucket: S3Bucket
) -> None:
    missing = f"s3://{s3_bucket.name}-missing/lake"
    path = ready_config(tmp_path, metastore_url, lake={"warehouse": missing})

    result = sluice("validate", str(path))

    assert result.returncode == ExitCode.UNREACHABLE, result.stdout + result.stderr
    assert f"unreachable  lake: cannot write a probe object in {missing}:" in result.stdout
    no_traceback(result.stderr)


def test_should_exit_2_naming_a_credential_written_into_the_lake_url(tmp_path: Path) -> None:
    path = tmp_path / "web_access.yaml"
    document = {
        "name": "web_access",
        "sources": [{"name": "access", "paths": ["logs/*"], "format": "raw"}],
        "lake": {"warehouse": "s3://bucket/lake?secret_key=wJalrXUtnFEMI"},
    }
    path.write_text(yaml.safe_dump(document))

    result = sluice("validate", str(path))

    assert result.returncode == ExitCode.INVALID
    assert "lake.warehouse" in result.stdout and "secret_key" in result.stdout
    assert "wJalrXUtnFEMI" not in result.stdout + result.stderr


REGEX_SOURCE = {
    "pattern": r"(?P<time>\S+ \S+) (?P<level>[A-Z]+) (?P<logger>[\w.]+): (?P<text>.*)",
    "columns": {"time": "timestamp"},
    "time_column": "time",
    "time_layout": "yyyy-MM-dd HH:mm:ss,SSS",
}


def test_should_show_what_a_regex_sources_pattern_reads_in_its_files(
    tmp_path: Path, metastore_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "logs" / "app.log"
    log.parent.mkdir()
    written = write_python_log(log, events=20, tracebacks=0.3, seed=2)
    path = upgraded(
        write_config(
            tmp_path, metastore_url, pattern="logs/app.log", fmt="regex", source=REGEX_SOURCE
        )
    )
    capsys.readouterr()

    assert main(["validate", str(path)]) == ExitCode.OK

    out = capsys.readouterr().out
    lines = sum(event.count(b"\n") for event in written)
    assert f"the pattern matches 20 of its first {lines} lines" in out
    first = written[0].decode().split(" ", 3)
    assert f"line 1: time='{first[0]} {first[1]}', level='{first[2]}'" in out


def test_should_refuse_a_declared_type_the_existing_table_cannot_take(
    tmp_path: Path, metastore_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from pipeline_core.config import load_pipeline_config
    from pipeline_core.lake import lake_location, open_lake

    append(tmp_path / "logs" / "app.log", b"2026-11-28 10:00:00,000 INFO app: up")
    first = {**REGEX_SOURCE, "columns": {"time": "timestamp", "level": "string"}}
    path = upgraded(
        write_config(tmp_path, metastore_url, pattern="logs/app.log", fmt="regex", source=first)
    )
    config = load_pipeline_config(path)
    with open_lake(lake_location(config)) as lake:
        lake.ensure_tables({"access": "regex"}, {"access": config.sources[0].declared_columns()})
    changed = {**REGEX_SOURCE, "columns": {"time": "timestamp", "level": "int"}}
    write_config(tmp_path, metastore_url, pattern="logs/app.log", fmt="regex", source=changed)
    capsys.readouterr()

    assert main(["validate", str(path)]) == ExitCode.INVALID

    out = capsys.readouterr().out
    assert "lake table access: column level is string and its source now declares int" in out
