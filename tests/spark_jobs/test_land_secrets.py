"""The landing job reads the metastore URL from its environment or from a file the
environment names (issue 30: never from its command line)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from pipeline_core.landing import METASTORE_URL_ENV, METASTORE_URL_FILE_ENV, private_file
from spark_jobs import land as entry_point
from spark_jobs.land import metastore_url

URL = "postgresql+psycopg://sluice:s3cr3tPW@db/sluice"


@pytest.fixture
def cwd(tmp_path: Path) -> Iterator[Path]:
    before = Path.cwd()
    os.chdir(tmp_path)
    try:
        yield tmp_path
    finally:
        os.chdir(before)


def test_the_names_agree_with_the_submitter() -> None:
    assert entry_point.METASTORE_URL_FILE_ENV == METASTORE_URL_FILE_ENV
    assert entry_point.METASTORE_URL_ENV == METASTORE_URL_ENV


def test_the_url_is_read_from_the_file_the_environment_names() -> None:
    with private_file(URL + "\n", "metastore") as path:
        assert metastore_url({METASTORE_URL_FILE_ENV: str(path)}) == URL


def test_a_file_name_is_read_in_the_working_directory(cwd: Path) -> None:
    (cwd / "metastore-0123").write_text(URL)

    assert metastore_url({METASTORE_URL_FILE_ENV: "metastore-0123"}) == URL


def test_the_file_wins_over_the_variable(tmp_path: Path) -> None:
    (tmp_path / "url").write_text(URL)

    environ = {METASTORE_URL_FILE_ENV: str(tmp_path / "url"), METASTORE_URL_ENV: "sqlite:///x"}
    assert metastore_url(environ) == URL


def test_the_variable_still_works_alone() -> None:
    assert metastore_url({METASTORE_URL_ENV: URL}) == URL


@pytest.mark.parametrize("content", [None, ""], ids=["missing", "empty"])
def test_an_unreadable_or_empty_file_stops_the_job_without_a_secret(
    tmp_path: Path, content: str | None
) -> None:
    path = tmp_path / "url"
    if content is not None:
        path.write_text(content)

    with pytest.raises(SystemExit, match=METASTORE_URL_FILE_ENV) as raised:
        metastore_url({METASTORE_URL_FILE_ENV: str(path), METASTORE_URL_ENV: URL})

    assert "s3cr3tPW" not in str(raised.value)


def test_nothing_set_names_both_ways() -> None:
    with pytest.raises(SystemExit) as raised:
        metastore_url({})

    assert METASTORE_URL_ENV in str(raised.value) and METASTORE_URL_FILE_ENV in str(raised.value)


def test_the_private_file_is_the_users_alone_and_removed_after() -> None:
    with private_file(URL, "metastore") as path:
        assert path.read_text() == URL
        assert (path.stat().st_mode & 0o777, path.parent.stat().st_mode & 0o777) == (0o600, 0o700)

    assert not path.exists() and not path.parent.exists()
