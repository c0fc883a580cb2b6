"""Hostile files: what someone who can write a log folder plants there to make a privileged
collector read what they cannot (a symlink to a secret, a symlinked folder), run end to end
through one collection. Nothing of the secret reaches staging; every line of the real log
beside it does."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pipeline_core.collector import Collector
from pipeline_core.config import PipelineConfig
from pipeline_core.metastore import Metastore
from pipeline_core.testing import append, staged_lines
from tests.support.pipelines import load

SECRET = b"root:$6$planted-secret-hash$:19000:0:99999:7:::"


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    path = tmp_path / "etc" / "shadow"
    append(path, SECRET)
    path.chmod(0o600)
    return path


def real_log(tmp_path: Path, name: str = "logs/access.log") -> list[bytes]:
    lines = [f"real line {i:03d} of the log".encode() for i in range(50)]
    append(tmp_path / name, *lines)
    return lines


def collect_once(
    tmp_path: Path, metastore_url: str, metastore: Metastore, pattern: str, **source: Any
) -> PipelineConfig:
    config = load(tmp_path, metastore_url, pattern=pattern, fmt="raw", source=source or None)
    Collector(config, metastore).run_once()
    return config


def files_holding(folder: Path, needle: bytes) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file() and needle in p.read_bytes()]


@pytest.mark.timeout(120)
def test_a_symlink_to_a_secret_beside_a_log_is_not_collected(
    tmp_path: Path, metastore_url: str, metastore: Metastore, secret: Path
) -> None:
    lines = real_log(tmp_path)
    (tmp_path / "logs" / "access.log.evil").symlink_to(secret)

    config = collect_once(tmp_path, metastore_url, metastore, "logs/access.log*")

    assert sorted(s.line for s in staged_lines(config)) == sorted(lines)
    assert files_holding(config.data_dir, SECRET[:16]) == []


@pytest.mark.timeout(120)
def test_a_symlinked_folder_under_a_recursive_glob_is_not_collected(
    tmp_path: Path, metastore_url: str, metastore: Metastore, secret: Path
) -> None:
    lines = real_log(tmp_path, "logs/app/access.log")
    (secret.parent / "access.log").symlink_to("shadow")
    (tmp_path / "logs" / "app" / "etc").symlink_to(secret.parent, target_is_directory=True)

    config = collect_once(tmp_path, metastore_url, metastore, "logs/**/access.log")

    assert sorted(s.line for s in staged_lines(config)) == sorted(lines)
    assert files_holding(config.data_dir, SECRET[:16]) == []


@pytest.mark.timeout(120)
def test_symlinks_followed_into_an_allowed_folder_only_are_collected(
    tmp_path: Path, metastore_url: str, metastore: Metastore, secret: Path
) -> None:
    pod_lines = real_log(tmp_path, "pods/web_1/nginx/0.log")
    containers = tmp_path / "containers"
    containers.mkdir()
    (containers / "web_1_nginx.log").symlink_to(tmp_path / "pods" / "web_1" / "nginx" / "0.log")
    (containers / "evil.log").symlink_to(secret)

    config = collect_once(
        tmp_path,
        metastore_url,
        metastore,
        "containers/*.log",
        follow_symlinks=True,
        symlink_targets=["pods"],
    )

    assert sorted(s.line for s in staged_lines(config)) == sorted(pod_lines)
    assert files_holding(config.data_dir, SECRET[:16]) == []
