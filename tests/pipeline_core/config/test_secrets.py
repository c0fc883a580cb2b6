"""Hiding secrets in what is printed about a config: ``SecretMask``, ``looks_secret``, URL
passwords, and ``describe_pipeline_config`` (what ``sluice validate`` prints)."""

from __future__ import annotations

import time
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
from pipeline_core.errors import ConfigError


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


def test_should_hide_url_passwords_and_secret_pairs_without_secret_values() -> None:
    assert SecretMask()("token=abc https://u:p@h") == "token=*** https://u:***@h"
    assert SecretMask()("an answer echoed (api_key=K3Y), page=2") == (
        "an answer echoed (api_key=***), page=2"
    )
    assert SecretMask()("cost=5 name=web") == "cost=5 name=web"


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


# -- issue 30: one masking function for every URL, applied before any escaping or cutting -------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("POST https://user:s3cr3tPW@host/ingest?api_key=K3YVALUE (request 1/1)",
         "POST https://user:***@host/ingest?api_key=*** (request 1/1)"),
        ("https://h/x?apikey=A1&access_token=B2&sig=C3&signature=D4&X-Amz-Credential=E5",
         "https://h/x?apikey=***&access_token=***&sig=***&signature=***&X-Amz-Credential=***"),
        ("postgresql://sluice@db/x?sslmode=require&password=s3cr3t",
         "postgresql://sluice@db/x?sslmode=require&password=***"),
        ("https://h/cb#access_token=T0K&state=1", "https://h/cb#access_token=***&state=1"),
        ("https://u:p%40ss%3Aw@host/x", "https://u:***@host/x"),
        ("https://h/x?next=https%3A%2F%2Fu%3Ahunter2%40h2%2Fy", "https://h/x?next=https%3A%2F%2Fu%3A***%40h2%2Fy"),
        ("https://h/x?q=user%3Dbob%26password%3Dhunter2&y=1", "https://h/x?q=user%3Dbob%26password%3D***&y=1"),
        ("https://h/x?q=PASSWORD%3dhunter2", "https://h/x?q=PASSWORD%3d***"),
        ("https://h/x?page=2&sort=name", "https://h/x?page=2&sort=name"),
    ],
)  # fmt: skip
def test_should_hide_userinfo_and_secret_options_in_plain_and_encoded_forms(
    text: str, expected: str
) -> None:
    assert mask_url_passwords(text) == expected


BACKSLASH_AND_QUOTES = "K3y\\Qz'Vw\"Jp"
LONG_TOKEN = "Zq9" * 120


@pytest.mark.parametrize(
    ("secret", "pieces"),
    [(BACKSLASH_AND_QUOTES, ["K3y", "Qz", "Vw", "Jp"]), (LONG_TOKEN, ["Zq9Zq9Zq"])],
    ids=["backslash-and-quotes", "long-token"],
)
def test_should_hide_a_secret_in_a_config_error_however_it_is_escaped_or_cut(
    tmp_path: Path, secret: str, pieces: list[str]
) -> None:
    document = {
        "name": "web_access",
        "sources": [{"name": "access", "paths": ["logs/*.log"], "format": "raw"}],
        "sinks": {
            "lake": {"type": "handoff"},
            "out": {"type": "http", "url": "ftp://logs.internal/in/${INGEST_TOKEN}/x"},
            "audit": {"type": "sql", "url": ["postgresql://a:${DB_PASSWORD}@db/audit"]},
        },
    }
    environ = {"INGEST_TOKEN": secret, "DB_PASSWORD": secret}

    with pytest.raises(ConfigError) as raised:
        load_pipeline_config(write(tmp_path, document), environ=environ)

    text = str(raised.value)
    assert "sinks.out" in text and "sinks.audit" in text
    assert "***" in text
    for piece in pieces:
        assert piece not in text


def test_should_hide_a_long_url_password_written_in_the_file(tmp_path: Path) -> None:
    password = "Pw7" * 60
    document = {
        "name": "web_access",
        "sources": [{"name": "access", "paths": ["logs/*.log"], "format": "raw"}],
        "sinks": {
            "lake": {"type": "handoff"},
            "out": {
                "type": "http",
                "url": f"ftp://{'u' * 50}:{password}@h/x?api_key=Ak9{'k' * 90}",
            },
        },
    }

    with pytest.raises(ConfigError) as raised:
        load_pipeline_config(write(tmp_path, document), environ={})

    text = str(raised.value)
    assert "Pw7Pw7" not in text and "Ak9" not in text and "kkkkkk" not in text


@pytest.mark.parametrize(
    "text",
    ["y" * 65536, "?" + "key" * 21845, "=a" * 32768, "a://" * 16384, "%3D" * 21845,
     "https://" + "a:@" * 21845, "?password=x&" * 5000, "a%3A%2F%2F" * 6553],
    ids=lambda text: text[:12],
)  # fmt: skip
def test_should_mask_64_kib_of_hostile_text_in_linear_time(text: str) -> None:
    started = time.perf_counter()

    mask_url_passwords(text)

    assert time.perf_counter() - started < 0.5


def test_should_hide_an_option_whose_percent_encoded_name_looks_secret() -> None:
    shown = mask_url_passwords("https://h/in?api%5Fkey=K3YVALUE&x%2Dapi%2Dtoken=T0KEN&page=2")

    assert "K3YVALUE" not in shown and "T0KEN" not in shown
    assert shown.endswith("&page=2")
