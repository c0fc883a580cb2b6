"""``handoff.staging``: a folder or an object store URL, never with credentials in it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from pipeline_core.config import load_pipeline_config
from pipeline_core.errors import ConfigError, LocationError
from pipeline_core.storage import StorageScheme


def load(folder: Path, **handoff: Any) -> Any:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "web_access.yaml"
    document = {
        "name": "web_access",
        "sources": [{"name": "access", "paths": ["logs/*"], "format": "raw"}],
        "handoff": handoff,
    }
    path.write_text(yaml.safe_dump(document))
    return load_pipeline_config(path)


def test_should_stage_and_seal_into_a_relative_folder_resolved_against_the_file(
    tmp_path: Path,
) -> None:
    config = load(tmp_path, staging="shared/staging")
    assert config.staging_location.is_local
    assert config.staging_dir == config.seal_dir == tmp_path / "shared" / "staging"


def test_should_keep_a_file_url_as_a_local_folder(tmp_path: Path) -> None:
    config = load(tmp_path, staging=f"file://{tmp_path}/staging")
    assert config.staging_dir == tmp_path / "staging"


def test_should_seal_into_the_spool_when_staging_is_in_an_object_store(tmp_path: Path) -> None:
    config = load(tmp_path, staging="s3://bucket/staging")
    assert config.staging_location.scheme is StorageScheme.S3
    assert config.seal_dir == tmp_path / "data" / "spool"
    assert load(tmp_path, staging="gs://b/p", spool_dir="spool2").seal_dir == tmp_path / "spool2"
    with pytest.raises(LocationError, match="not a local folder"):
        _ = config.staging_dir  # the landing side reads it through the store


def test_should_refuse_staging_and_staging_dir_together(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"handoff\.staging or handoff\.staging_dir"):
        load(tmp_path, staging="s3://bucket/x", staging_dir="/data/staging")


@pytest.mark.parametrize(
    ("url", "named"),
    [
        ("s3://AKIAEXAMPLE:wJalrXUtnFEMI@bucket/staging", "password"),
        ("s3://bucket/staging?secret_key=wJalrXUtnFEMI", "secret_key"),
        ("abfs://c@acct.dfs.core.windows.net/p?sas_token=wJalrXUtnFEMI", "sas_token"),
    ],
)
def test_should_refuse_credentials_in_the_url_naming_the_key_and_the_file(
    tmp_path: Path, url: str, named: str
) -> None:
    with pytest.raises(ConfigError) as raised:
        load(tmp_path, staging=url)
    message = str(raised.value)
    assert str(tmp_path / "web_access.yaml") in message
    assert "handoff.staging" in message and named in message
    assert "wJalrXUtnFEMI" not in message


def test_should_refuse_a_spool_bound_below_a_mebibyte(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"handoff\.max_spool_bytes"):
        load(tmp_path, staging="s3://bucket/x", max_spool_bytes=1000)
