"""The ``worker`` section: the log hosts of the worker DAG, their queues, their executor."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from pipeline_core.config import WorkerConfig, load_pipeline_config
from pipeline_core.errors import ConfigError

SOURCE: dict[str, Any] = {"name": "access", "paths": ["logs/access.log*"], "format": "raw"}


def write(folder: Path, worker: object) -> Path:
    path = folder / "web_access.yaml"
    path.write_text(yaml.safe_dump({"name": "web_access", "sources": [SOURCE], "worker": worker}))
    return path


def problems(folder: Path, worker: object) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        load_pipeline_config(write(folder, worker))
    return caught.value.problems


def test_by_default_no_hosts_and_a_queue_per_host_template(tmp_path: Path) -> None:
    path = tmp_path / "web_access.yaml"
    path.write_text(yaml.safe_dump({"name": "web_access", "sources": [SOURCE]}))

    worker = load_pipeline_config(path).worker

    assert worker == WorkerConfig(hosts=[], queue="sluice-{host}", executor=None)


def test_each_host_gets_its_queue(tmp_path: Path) -> None:
    config = load_pipeline_config(
        write(tmp_path, {"hosts": ["web-1", "web-2.example.com"], "executor": "EdgeExecutor"})
    )

    assert config.worker.hosts == ["web-1", "web-2.example.com"]
    assert [config.worker.queue_of(h) for h in config.worker.hosts] == [
        "sluice-web-1",
        "sluice-web-2.example.com",
    ]
    assert config.worker.executor == "EdgeExecutor"


def test_a_queue_template_of_ones_own(tmp_path: Path) -> None:
    config = load_pipeline_config(write(tmp_path, {"hosts": ["web-1"], "queue": "logs@{host}"}))

    assert config.worker.queue_of("web-1") == "logs@web-1"


@pytest.mark.parametrize(
    ("worker", "key", "says"),
    [
        ({"hosts": ["web 1"]}, "worker.hosts.0", "should match pattern"),
        ({"hosts": ["web/1"]}, "worker.hosts.0", "should match pattern"),
        ({"hosts": ["-web"]}, "worker.hosts.0", "should match pattern"),
        ({"hosts": ["web-1", "web-1"]}, "worker.hosts", "repeated: web-1"),
        ({"hosts": "web-1"}, "worker.hosts", "valid list"),
        ({"queue": "sluice"}, "worker.queue", "'{host}' exactly once"),
        ({"queue": "{host}-{host}"}, "worker.queue", "'{host}' exactly once"),
        ({"queue": "{pipeline}-{host}"}, "worker.queue", "no other"),
        ({"queue": "a,{host}"}, "worker.queue", "letters, digits"),
        ({"queue": "a {host}"}, "worker.queue", "letters, digits"),
        ({"queue": "{host"}, "worker.queue", "not a queue template"),
        ({"executor": "Edge Executor"}, "worker.executor", "should match pattern"),
        ({"host": ["web-1"]}, "worker.host", "unknown key"),
    ],
)
def test_a_bad_worker_section_is_rejected_naming_the_key(
    tmp_path: Path, worker: dict[str, Any], key: str, says: str
) -> None:
    [problem] = problems(tmp_path, worker)

    assert problem.startswith(f"{key}: ")
    assert says in problem
