"""Hiding secrets in what is printed about a config: ``SecretMask``, ``looks_secret``, URL
passwords, and ``describe_pipeline_config`` (what ``sluice validate`` prints)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pytest
import yaml

from pipeline_core.config import (
    METASTORE_URL_ENV,
    SecretMask,
    describe_pipeline_config,
    load_pipeline_config,
    looks_secret,
    mask_url_passwords,
)


@pytest.fixture(autouse=True)
def no_metastore_override(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(METASTORE_URL_ENV, raising=False)


@pytest.mark.parametrize(
    "name",
    ["DB_PASSWORD", "db_password", "PGPASSWD", "CLIENT_SECRET", "API_TOKEN", "INGEST_KEY",
     "AWS_SECRET_ACCESS_KEY", "KEY", "GCP_CREDENTIALS"],
)  # fmt: skip
def test_should_take_these_names_for_secrets(name: str) -> None:
    assert looks_secret(name)


@pytest.mark.parametrize("name", ["NODE_NAME", "LOG_DIR", "HOST", "SCHEDULE", "PASS"])
def test_should_not_take_these_names_for_secrets(name: str) -> None:
    assert not looks_secret(name)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("postgresql+psycopg://sluice:s3cret@db:5432/x", "postgresql+psycopg://sluice:***@db:5432/x"),
        ("https://u:p@ss@host/path?q=1", "https://u:***@host/path?q=1"),
        ("http://:only@host", "http://:***@host"),
        ("a ftp://u:1@h and https://v:2@k", "a ftp://u:***@h and https://v:***@k"),
        ("postgresql://user@db/x", "postgresql://user@db/x"),
        ("https://host:8443/path", "https://host:8443/path"),
        ("https://host/a:b@c", "https://host/a:b@c"),
        ("sqlite:////var/lib/sluice.db", "sqlite:////var/lib/sluice.db"),
        ("s3://b/p?region=eu&secret_key=abc", "s3://b/p?region=eu&secret_key=***"),
        ("'s3://b/p?x_session_token=abc&y=1'", "'s3://b/p?x_session_token=***&y=1'"),
        ("s3://b/p?region=eu-west-1", "s3://b/p?region=eu-west-1"),
    ],
)  # fmt: skip
def test_should_hide_url_passwords(text: str, expected: str) -> None:
    assert mask_url_passwords(text) == expected


def test_should_hide_every_occurrence_longest_value_first() -> None:
    mask = SecretMask.of(["abc", "abcdef", ""])

    assert mask("x abcdef y abc z") == "x *** y *** z"
    assert SecretMask.of([""]).values == frozenset()


def test_should_hide_nothing_but_url_passwords_without_secret_values() -> None:
    assert SecretMask()("token=abc https://u:p@h") == "token=abc https://u:***@h"


def write(folder: Path, document: Mapping[str, object]) -> Path:
    path = folder / "web_access.yaml"
    path.write_text(yaml.safe_dump(dict(document)))
    return path


def test_should_describe_a_config_with_every_secret_hidden(tmp_path: Path) -> None:
    document = {
        "name": "web_access",
        "sources": [{"name": "access", "paths": ["/var/log/${APP_SECRET}/*.log"], "format": "raw"}],
        "metastore": {"url": "postgresql+psycopg://sluice:${DB_PASSWORD}@db/sluice"},
        "sinks": {
            "lake": {"type": "handoff"},
            "out": {
                "type": "http",
                "url": "https://logs.internal/in?token=${INGEST_TOKEN}",
                "headers": {"Authorization": "Bearer written-in-the-file"},
            },
            "audit": {"type": "sql", "url": "postgresql+psycopg://a:plain@db/audit"},
            "archive": {"type": "file", "path": "/srv/archive/web.log"},
        },
    }
    environ = {"APP_SECRET": "hidden-dir", "DB_PASSWORD": "pw-1", "INGEST_TOKEN": "tk-2"}
    config = load_pipeline_config(write(tmp_path, document), environ=environ)

    lines = describe_pipeline_config(config)

    text = "\n".join(lines)
    for secret in ("hidden-dir", "pw-1", "tk-2", "written-in-the-file", "plain"):
        assert secret not in text
    assert lines[0] == "pipeline web_access: valid"
    assert "  source access (raw): /var/log/***/*.log" in lines
    assert "  metastore postgresql+psycopg://sluice:***@db/sluice" in lines
    assert "  sink out (http): https://logs.internal/in?token=*** (headers Authorization)" in lines
    assert "  sink audit (sql): postgresql+psycopg://a:***@db/audit table sluice_events" in lines
    assert "  sink archive (file): /srv/archive/web.log" in lines
    assert "  sink group out (default): out (http)" in lines


def test_should_describe_what_validate_printed_before(tmp_path: Path) -> None:
    document = {"name": "web_access", "sources": [{"paths": ["logs/*"], "format": "raw"}]}
    config = load_pipeline_config(write(tmp_path, document), environ={})

    base = tmp_path.resolve()
    assert describe_pipeline_config(config) == [
        "pipeline web_access: valid",
        f"  source default (raw): {base / 'logs' / '*'}",
        f"  staging  {base / 'data' / 'staging'}",
        f"  lake     {base / 'data' / 'lake'}",
        f"  metastore sqlite:///{base / 'data' / 'sluice.db'}",
        "  schedule */5 * * * *",
        "  sink group lake (default): lake (handoff)",
    ]
