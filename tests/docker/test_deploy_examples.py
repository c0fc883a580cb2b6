"""The examples under ``deploy/`` parse and agree with Sluice: the pipeline files validate, the
systemd unit passes ``systemd-analyze verify``, the DaemonSet's pipeline files validate in each
node's environment and it mounts what they name, and each ``spark_default`` connection
resolves, through the Spark provider's own hook, to the master it is meant for."""

from __future__ import annotations

import configparser
import json
import re
import shlex
import shutil
import subprocess
from pathlib import Path, PurePosixPath
from typing import Any

import pytest
import yaml

from pipeline_core.config import load_pipeline_config
from tests.support.airflow_env import REPO_ROOT

DEPLOY = REPO_ROOT / "deploy"
UNIT = DEPLOY / "systemd" / "sluice-collector.service"
DAEMONSET = DEPLOY / "kubernetes" / "collector-daemonset.yaml"
SPARK = DEPLOY / "spark"


def read_unit(path: Path) -> configparser.ConfigParser:
    unit = configparser.ConfigParser(strict=False, interpolation=None)
    unit.optionxform = str  # type: ignore[assignment,method-assign]
    unit.read(path)
    return unit


def test_systemd_unit_runs_the_collector_and_lets_it_seal_on_stop() -> None:
    service = read_unit(UNIT)["Service"]
    command = shlex.split(service["ExecStart"])
    assert command[0].endswith("/sluice") and command[-2:] == ["collect", "/etc/sluice/pipelines"]
    assert service["KillSignal"] == "SIGTERM"
    assert int(service["TimeoutStopSec"]) >= 30
    assert service["ExecReload"] == "/bin/kill -HUP $MAINPID"
    assert service["Restart"] in ("always", "on-failure")
    env = (UNIT.parent / "sluice-collector.env").read_text()
    assert re.search(r"^SLUICE_METASTORE_URL=postgresql\+psycopg://", env, re.MULTILINE)


def test_systemd_unit_verifies(tmp_path: Path) -> None:
    """``systemd-analyze verify`` (the binary the unit names does not exist here, so the
    check runs on a copy starting ``/bin/echo`` instead)."""
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze is not installed")
    copy = tmp_path / UNIT.name
    copy.write_text(
        re.sub(r"^ExecStart=\S+", "ExecStart=/bin/echo", UNIT.read_text(), flags=re.MULTILINE)
    )
    completed = subprocess.run(
        [analyze, "verify", "--man=no", str(copy)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert completed.returncode == 0 and not completed.stderr.strip(), completed.stderr


def test_systemd_pipeline_file_writes_only_where_the_unit_may() -> None:
    config = load_pipeline_config(UNIT.parent / "web_access.yaml")
    writable = read_unit(UNIT)["Service"]["ReadWritePaths"].split()
    assert any(str(config.staging_dir).startswith(path) for path in writable)
    assert any(str(config.data_dir).startswith(path) for path in writable)
    assert yaml.safe_load((UNIT.parent / "web_access.yaml").read_text())["collector"]["host"]


def daemonset_documents() -> dict[str, dict[str, Any]]:
    return {doc["kind"]: doc for doc in yaml.safe_load_all(DAEMONSET.read_text())}


def test_daemonset_gives_each_node_a_valid_pipeline_file_from_its_environment(
    tmp_path: Path,
) -> None:
    """The ConfigMap's files are mounted as they are; the ``${VAR}`` they use are set in the
    collector's environment (the node's name, the metastore password from the Secret)."""
    documents = daemonset_documents()
    assert set(documents) == {"ConfigMap", "PersistentVolumeClaim", "DaemonSet"}
    pod = documents["DaemonSet"]["spec"]["template"]["spec"]
    assert "initContainers" not in pod
    [collector] = pod["containers"]
    env = {item["name"]: item["valueFrom"] for item in collector["env"]}
    assert env["NODE_NAME"] == {"fieldRef": {"fieldPath": "spec.nodeName"}}
    assert env["SLUICE_DB_PASSWORD"]["secretKeyRef"]["key"] == "password"
    environ = {"NODE_NAME": "node-7", "SLUICE_DB_PASSWORD": "pw-from-secret"}
    mounts = {m["mountPath"]: m["name"] for m in collector["volumeMounts"]}
    pipelines = next(v for v in pod["volumes"] if v["name"] == mounts["/etc/sluice/pipelines"])
    configmap = documents["ConfigMap"]
    assert pipelines["configMap"]["name"] == configmap["metadata"]["name"]
    for name, text in configmap["data"].items():
        used = set(re.findall(r"\$\{([A-Za-z_][A-Za-z0-9_]*)", text))
        assert used <= set(env), f"{name} uses variables the collector does not set: {used}"
        (tmp_path / name).write_text(text)
        config = load_pipeline_config(tmp_path / name, environ=environ)
        assert config.collector.host == "node-7"
        assert "pw-from-secret" in config.metastore_url
        assert "pw-from-secret" not in config.masked(config.metastore_url)
        for directory in (config.staging_dir, config.lake_dir, config.data_dir):
            assert any(PurePosixPath(directory).is_relative_to(path) for path in mounts), directory
        for source in config.sources:
            for pattern in source.paths:
                assert any(pattern.startswith(path + "/") for path in mounts), pattern
    shared = next(v for v in pod["volumes"] if v["name"] == mounts["/shared"])
    claim = documents["PersistentVolumeClaim"]
    assert shared["persistentVolumeClaim"]["claimName"] == claim["metadata"]["name"]
    assert claim["spec"]["accessModes"] == ["ReadWriteMany"]
    assert pod["terminationGracePeriodSeconds"] >= 30
    image = collector["image"]
    assert ":" in image.rsplit("/", 1)[-1] and not image.endswith(":latest"), image


@pytest.mark.parametrize(
    ("example", "master", "deploy_mode", "queue"),
    [
        ("spark_default.standalone.json", "spark://spark-master.example.internal:7077", None, None),
        ("spark_default.yarn.json", "yarn", "client", "etl"),
    ],
)
def test_spark_connection_resolves_to_its_master(
    monkeypatch: pytest.MonkeyPatch,
    example: str,
    master: str,
    deploy_mode: str | None,
    queue: str | None,
) -> None:
    from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook

    monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", (SPARK / example).read_text())
    hook = SparkSubmitHook(conn_id="spark_default", env_vars={"PYSPARK_PYTHON": "python3"})
    command = hook._build_spark_submit_command("land.py")
    assert command[command.index("--master") + 1] == master
    assert hook._connection["deploy_mode"] == deploy_mode
    assert hook._connection["queue"] == queue


def test_kubernetes_connection_resolves_to_the_api_server(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A Kubernetes master also needs the Kubernetes provider on the Airflow workers (the Spark
    provider's ``cncf-kubernetes`` extra); without it the hook cannot be built at all, so a
    stand-in for its client module is put in place here."""
    from airflow.providers.apache.spark.hooks import spark_submit

    monkeypatch.setattr(spark_submit, "kube_client", object(), raising=False)
    monkeypatch.setenv(
        "AIRFLOW_CONN_SPARK_DEFAULT", (SPARK / "spark_default.kubernetes.json").read_text()
    )
    hook = spark_submit.SparkSubmitHook(conn_id="spark_default")
    command = hook._build_spark_submit_command("land.py")
    assert command[command.index("--master") + 1] == "k8s://https://kubernetes.default.svc:443"
    assert command[command.index("--deploy-mode") + 1] == "client"
    assert "spark.kubernetes.namespace=sluice" in command


@pytest.mark.parametrize("path", sorted(SPARK.glob("spark-defaults.*.conf")), ids=lambda p: p.name)
def test_spark_defaults_are_spark_properties(path: Path) -> None:
    properties: dict[str, str] = {}
    for line in path.read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            key, value = line.split(None, 1)
            properties[key] = value.strip()
    assert properties and all(key.startswith("spark.") for key in properties)
    assert "spark.pyspark.python" in properties  # the executors' Python, never the driver's path
    mode = path.name.split(".")[1]
    assert json.loads((SPARK / f"spark_default.{mode}.json").read_text())["conn_type"] == "spark"
