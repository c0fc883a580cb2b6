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
from urllib.parse import urlsplit

import pytest
import yaml

from pipeline_core.config import PipelineConfig, load_pipeline_config
from pipeline_core.storage import StorageScheme
from tests.support.airflow_env import REPO_ROOT

DEPLOY = REPO_ROOT / "deploy"
UNIT = DEPLOY / "systemd" / "sluice-collector.service"
DAEMONSET = DEPLOY / "kubernetes" / "collector-daemonset.yaml"
STORE = DEPLOY / "kubernetes" / "object-store.yaml"
SPARK = DEPLOY / "spark"


def spark_properties(path: Path) -> dict[str, str]:
    properties: dict[str, str] = {}
    for line in path.read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            key, value = line.split(None, 1)
            properties[key] = value.strip()
    return properties


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


def documents_of(path: Path) -> dict[tuple[str, str], dict[str, Any]]:
    """A manifest's documents by ``(kind, name)``."""
    return {
        (doc["kind"], doc["metadata"]["name"]): doc for doc in yaml.safe_load_all(path.read_text())
    }


def daemonset_documents() -> dict[tuple[str, str], dict[str, Any]]:
    return documents_of(DAEMONSET)


def collector_pod() -> dict[str, Any]:
    found: dict[str, Any] = daemonset_documents()[("DaemonSet", "sluice-collector")]["spec"][
        "template"
    ]["spec"]
    return found


def container_environment(container: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Name -> where its value comes from (``value``, ``valueFrom``), and each ``envFrom``
    ConfigMap's keys as ``{"configMapKeyRef": ...}``."""
    env: dict[str, dict[str, Any]] = {}
    for source in container.get("envFrom") or []:
        name = source["configMapRef"]["name"]
        configmap = documents_of(DAEMONSET)[("ConfigMap", name)]
        for key in configmap["data"]:
            env[key] = {"configMapKeyRef": {"name": name, "key": key}}
    for item in container["env"]:
        env[item["name"]] = item.get("valueFrom") or {"value": item["value"]}
    return env


def test_daemonset_gives_each_node_a_valid_pipeline_file_from_its_environment(
    tmp_path: Path,
) -> None:
    """The ConfigMap's files are mounted as they are; the ``${VAR}`` they use are set in the
    collector's environment (the node's name, the metastore password from the Secret)."""
    documents = daemonset_documents()
    assert {kind for kind, _ in documents} == {"ConfigMap", "DaemonSet"}
    pod = collector_pod()
    assert "initContainers" not in pod
    [collector] = pod["containers"]
    env = container_environment(collector)
    assert env["NODE_NAME"] == {"fieldRef": {"fieldPath": "spec.nodeName"}}
    assert env["SLUICE_DB_PASSWORD"]["secretKeyRef"]["key"] == "password"
    environ = {"NODE_NAME": "node-7", "SLUICE_DB_PASSWORD": "pw-from-secret"}
    mounts = {m["mountPath"]: m["name"] for m in collector["volumeMounts"]}
    pipelines = next(v for v in pod["volumes"] if v["name"] == mounts["/etc/sluice/pipelines"])
    configmap = documents[("ConfigMap", pipelines["configMap"]["name"])]
    for name, text in configmap["data"].items():
        used = set(re.findall(r"\$\{([A-Za-z_][A-Za-z0-9_]*)", text))
        assert used <= set(env), f"{name} uses variables the collector does not set: {used}"
        (tmp_path / name).write_text(text)
        config = load_pipeline_config(tmp_path / name, environ=environ)
        assert config.collector.host == "node-7"
        assert "pw-from-secret" in config.metastore_url
        assert "pw-from-secret" not in config.masked(config.metastore_url)
        for directory in (config.seal_dir, config.data_dir):
            assert any(PurePosixPath(directory).is_relative_to(path) for path in mounts), directory
        for source in config.sources:
            for pattern in source.paths:
                assert any(pattern.startswith(path + "/") for path in mounts), pattern
    assert pod["terminationGracePeriodSeconds"] >= 30
    image = collector["image"]
    assert ":" in image.rsplit("/", 1)[-1] and not image.endswith(":latest"), image


def daemonset_pipeline_configs(tmp_path: Path) -> list[PipelineConfig]:
    configmap = daemonset_documents()[("ConfigMap", "sluice-pipelines")]
    configs = []
    for name, text in configmap["data"].items():
        (tmp_path / name).write_text(text)
        environ = {"NODE_NAME": "node-7", "SLUICE_DB_PASSWORD": "pw"}
        configs.append(load_pipeline_config(tmp_path / name, environ=environ))
    assert configs
    return configs


def test_daemonset_collectors_stage_into_the_store_and_mount_no_shared_volume(
    tmp_path: Path,
) -> None:
    """Each node's collector seals into a volume of its own pod (emptyDir or hostPath) and
    uploads to ``s3://``; no claim anywhere: the lake is in the store too, and the Spark
    executors mount no volume."""
    pod = collector_pod()
    [collector] = pod["containers"]
    volumes = {v["name"]: v for v in pod["volumes"]}
    mounts = {m["mountPath"]: m["name"] for m in collector["volumeMounts"]}
    for volume in volumes.values():
        assert "persistentVolumeClaim" not in volume, volume["name"]
        assert set(volume) & {"emptyDir", "hostPath", "configMap"}, volume["name"]
    for config in daemonset_pipeline_configs(tmp_path):
        assert config.staging_location.scheme is StorageScheme.S3
        [spool] = [path for path in mounts if PurePosixPath(config.seal_dir).is_relative_to(path)]
        local = volumes[mounts[spool]]
        assert "emptyDir" in local or "hostPath" in local
        assert not any(
            mount.get("readOnly")
            for mount in collector["volumeMounts"]
            if mount["mountPath"] == spool
        )
        assert config.lake_location.scheme is StorageScheme.S3
    assert not [kind for kind, _ in daemonset_documents() if kind == "PersistentVolumeClaim"]
    properties = spark_properties(SPARK / "spark-defaults.kubernetes.conf")
    assert not [key for key in properties if key.startswith("spark.kubernetes.executor.volumes.")]


def test_daemonset_store_credentials_come_from_a_secret_and_its_endpoint_from_a_configmap(
    tmp_path: Path,
) -> None:
    [collector] = collector_pod()["containers"]
    env = container_environment(collector)
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        assert env[key]["secretKeyRef"]["name"] == "sluice-object-store", key
    assert env["AWS_ENDPOINT_URL"]["configMapKeyRef"]["name"] == "sluice-object-store"
    assert "AWS_REGION" in env
    store = documents_of(STORE)
    service = store[("Service", "object-store")]
    configmap = daemonset_documents()[("ConfigMap", "sluice-object-store")]
    endpoint = urlsplit(configmap["data"]["AWS_ENDPOINT_URL"])
    assert endpoint.hostname == f"object-store.{service['metadata']['namespace']}.svc.cluster.local"
    assert endpoint.port == service["spec"]["ports"][0]["port"]
    # No credential in any manifest: only references to the Secret, created by kubectl.
    for path in (DAEMONSET, STORE):
        for document in yaml.safe_load_all(path.read_text()):
            assert document["kind"] != "Secret", path
            if document["kind"] == "ConfigMap":
                text = yaml.safe_dump(document["data"])
                assert "AWS_SECRET_ACCESS_KEY" not in text and "AWS_ACCESS_KEY_ID" not in text
    for config in daemonset_pipeline_configs(tmp_path):
        for location in (config.staging_location, config.lake_location):
            assert "@" not in urlsplit(location.url).netloc


def test_the_example_object_store_creates_the_staging_and_lake_buckets(tmp_path: Path) -> None:
    store = documents_of(STORE)
    deployment = store[("Deployment", "object-store")]
    service = store[("Service", "object-store")]
    pod = deployment["spec"]["template"]["spec"]
    [server] = pod["containers"]
    pin = re.search(
        r"^moto\[server\]==(\S+)", (REPO_ROOT / "requirements-dev.txt").read_text(), re.MULTILINE
    )
    assert pin and server["image"] == f"motoserver/moto:{pin.group(1)}"
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= labels.items()
    script = "\n".join(server["args"])
    port = {p["name"]: p["containerPort"] for p in server["ports"]}[
        service["spec"]["ports"][0]["targetPort"]
    ]
    assert f"moto_server -H 0.0.0.0 -p {port}" in script
    created = re.search(r"for bucket in \(([^)]*)\):", script)
    assert created and "create_bucket(Bucket=bucket)" in script
    last = created.group(1).split(",")[-1].strip().strip('"')
    assert server["readinessProbe"]["httpGet"]["path"] == f"/{last}"
    for config in daemonset_pipeline_configs(tmp_path):
        for location in (config.staging_location, config.lake_location):
            assert f'"{urlsplit(location.url).netloc}"' in created.group(1), location


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
    properties = spark_properties(path)
    assert properties and all(key.startswith("spark.") for key in properties)
    assert "spark.pyspark.python" in properties  # the executors' Python, never the driver's path
    mode = path.name.split(".")[1]
    assert json.loads((SPARK / f"spark_default.{mode}.json").read_text())["conn_type"] == "spark"
