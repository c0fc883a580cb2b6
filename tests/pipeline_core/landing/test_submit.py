"""The metastore URL reaches the landing job's driver without appearing in spark-submit's
command line (issue 30): YARN and Kubernetes masters get it through a file created 0600, the
other masters through spark-submit's environment, as before."""

from __future__ import annotations

import json
import os
import signal
import stat
import threading
from pathlib import Path
from typing import Any

import pytest
from airflow.providers.apache.spark.hooks import spark_submit
from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook

from pipeline_core.landing import (
    METASTORE_URL_ENV,
    SUBMIT_ID_ENV,
    SparkJobSpec,
    SparkSubmitJob,
    masked_arguments,
)
from pipeline_core.operations import PipelineOperations
from pipeline_core.testing import wait_until

PASSWORD, SSL_PASSWORD = "s3cr3tPW", "sslK3yPW"
URL = f"postgresql+psycopg://sluice:{PASSWORD}@db.internal/sluice?sslpassword={SSL_PASSWORD}"
URL_FILE_ENV = "SLUICE_METASTORE_URL_FILE"
SPEC = SparkJobSpec(
    application="/repo/spark_jobs/land.py",
    application_args=["--checkpoint", "/staging/web_access/00000001", "--lake", "/lake"],
    name="sluice-land-web_access-1",
    conf={"spark.sql.session.timeZone": "UTC"},
    env_vars={"PYSPARK_PYTHON": "/venv/bin/python", METASTORE_URL_ENV: URL},
    py_files="/repo/dist/pipeline_core.zip",
)


def connection(host: str, deploy_mode: str, **extra: Any) -> str:
    document: dict[str, Any] = {"conn_type": "spark", "host": host}
    if host.startswith("k8s://"):
        document["port"] = 443
        extra["namespace"] = "sluice"
    document["extra"] = {"deploy-mode": deploy_mode, **extra}
    return json.dumps(document)


CLUSTER_MASTERS = {
    "yarn-client": connection("yarn", "client"),
    "yarn-cluster": connection("yarn", "cluster"),
    "k8s-client": connection("k8s://https://kubernetes.default.svc", "client"),
    "k8s-cluster": connection("k8s://https://kubernetes.default.svc", "cluster"),
}


@pytest.fixture(autouse=True)
def kubernetes_client(monkeypatch: pytest.MonkeyPatch) -> None:
    """The hook refuses a Kubernetes master without the Kubernetes provider's client module;
    a stand-in (nothing here talks to a cluster)."""
    monkeypatch.setattr(spark_submit, "kube_client", object(), raising=False)


class Submitted:
    """What one spark-submit would have run: its arguments, its process's environment and
    the metastore URL's file as it was while it ran."""

    def __init__(self, hook: SparkSubmitHook, application: str, kwargs: dict[str, Any]) -> None:
        self.argv = hook._build_spark_submit_command(application)
        self.env: dict[str, str] = dict(hook._env or kwargs.get("env") or {})
        self.files = hook._files
        self.url_file: Path | None = None
        self.url_file_mode = self.url_folder_mode = 0
        self.url_file_text = ""
        named = self.env.get(URL_FILE_ENV)
        for argument in self.argv:
            key, _, value = argument.partition("=")
            if key.endswith(f"Env.{URL_FILE_ENV}"):
                named = value
        if named is not None:
            path = Path(named)
            if not path.is_absolute():  # cluster mode: shipped with --files
                path = next(Path(f) for f in (self.files or "").split(",") if Path(f).name == named)
            self.url_file = path
            self.url_file_mode = stat.S_IMODE(path.stat().st_mode)
            self.url_folder_mode = stat.S_IMODE(path.parent.stat().st_mode)
            self.url_file_text = path.read_text()


@pytest.fixture
def submitted(monkeypatch: pytest.MonkeyPatch) -> list[Submitted]:
    runs: list[Submitted] = []

    def submit(self: SparkSubmitHook, application: str = "", **kwargs: Any) -> None:
        runs.append(Submitted(self, application, kwargs))

    monkeypatch.setattr(SparkSubmitHook, "submit", submit)
    return runs


@pytest.fixture
def operations(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> PipelineOperations:
    """``land`` of a pipeline whose landing job is ``SPEC`` (nothing is read or committed)."""
    operations = PipelineOperations(tmp_path / "web_access.yaml")
    monkeypatch.setattr(operations.landing, "job", lambda *args, **kwargs: SPEC)
    monkeypatch.setattr(operations.landing, "commit", lambda ids: [])
    return operations


class Progress:
    def __init__(self) -> None:
        self.commands: list[str] = []

    def submitting(self, command: str) -> None:
        self.commands.append(command)

    def spark_finished(self, seconds: float) -> None:
        pass

    def committing(self, checkpoint_ids: Any) -> None:
        pass


def assert_no_secret(*texts: str) -> None:
    for text in texts:
        assert PASSWORD not in text and SSL_PASSWORD not in text


@pytest.mark.parametrize(
    ("defined", "master"),
    [(None, "local[*]"), (connection("spark://spark-master", "client"), "spark://spark-master")],
)
def test_sluice_land_submits_to_spark_default_or_on_local_cores_without_one(
    operations: PipelineOperations,
    submitted: list[Submitted],
    monkeypatch: pytest.MonkeyPatch,
    defined: str | None,
    master: str,
) -> None:
    """Without a ``spark_default`` connection the provider would submit to YARN; ``sluice
    land`` lands on this machine's cores instead, and sets no environment variable for it."""
    if defined is None:
        monkeypatch.delenv("AIRFLOW_CONN_SPARK_DEFAULT", raising=False)
    else:
        monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", defined)
    before = dict(os.environ)

    operations.land([1])

    [run] = submitted
    assert run.argv[run.argv.index("--master") + 1] == master
    assert dict(os.environ) == before


@pytest.mark.parametrize("master", list(CLUSTER_MASTERS))
def test_a_yarn_or_kubernetes_spark_submit_carries_no_metastore_password(
    monkeypatch: pytest.MonkeyPatch,
    operations: PipelineOperations,
    submitted: list[Submitted],
    master: str,
) -> None:
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", CLUSTER_MASTERS[master])
    progress = Progress()

    operations.land([1], progress=progress)

    [run] = submitted
    assert_no_secret(*run.argv, *progress.commands, operations.landing.command(SPEC))
    assert METASTORE_URL_ENV not in run.env
    assert run.url_file is not None, "the driver is told where the URL is"
    assert run.url_file_text == URL
    assert run.url_file_mode == 0o600
    assert run.url_folder_mode == 0o700
    assert not run.url_file.exists(), "removed once spark-submit is done"
    if master.endswith("-client"):  # the driver is spark-submit's child: the path itself
        assert run.env[URL_FILE_ENV] == str(run.url_file)
    else:  # shipped to the driver's working directory
        assert run.files is not None and str(run.url_file) in run.files.split(",")


@pytest.mark.parametrize("host", ["local[2]", "spark://spark-master:7077"])
def test_other_masters_get_the_url_in_spark_submits_environment_only(
    monkeypatch: pytest.MonkeyPatch,
    operations: PipelineOperations,
    submitted: list[Submitted],
    host: str,
) -> None:
    monkeypatch.setenv(
        "AIRFLOW_CONN_SPARK_DEFAULT", json.dumps({"conn_type": "spark", "host": host})
    )

    operations.land([1], progress=Progress())

    [run] = submitted
    assert_no_secret(*run.argv)
    assert run.env[METASTORE_URL_ENV] == URL
    assert run.url_file is None


def test_the_shown_command_masks_secret_settings_and_url_secrets(
    monkeypatch: pytest.MonkeyPatch, operations: PipelineOperations
) -> None:
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", CLUSTER_MASTERS["yarn-client"])
    spec = SparkJobSpec(
        **{
            **SPEC.__dict__,
            "conf": {
                "spark.hadoop.fs.s3a.secret.key": "AKIAS3CRET",
                "spark.sluice.endpoint": "https://u:EndpointPW@store.internal/x?sig=S1GNATURE",
            },
        }
    )

    command = operations.landing.command(spec)

    assert_no_secret(command)
    for secret in ("AKIAS3CRET", "EndpointPW", "S1GNATURE"):
        assert secret not in command
    assert "spark.hadoop.fs.s3a.secret.key=***" in command
    assert f"spark.yarn.appMasterEnv.{URL_FILE_ENV}=" in command


def test_the_url_file_is_removed_when_spark_submit_fails(
    monkeypatch: pytest.MonkeyPatch, operations: PipelineOperations
) -> None:
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", CLUSTER_MASTERS["yarn-client"])
    seen: list[Path] = []

    def fail(self: SparkSubmitHook, application: str = "", **kwargs: Any) -> None:
        seen.append(Path((self._env_vars or {})[URL_FILE_ENV]))
        raise RuntimeError("spark-submit exited with 1")

    monkeypatch.setattr(SparkSubmitHook, "submit", fail)

    with pytest.raises(Exception, match="exited with 1"):
        operations.land([1])

    assert seen and not seen[0].exists() and not seen[0].parent.exists()


SPARK_SUBMIT_SHAPE = """#!/usr/bin/env bash
# spark-submit's shape: children in its process group (spark-class's launcher JVM, the Python
# driver the SparkSubmit JVM starts), their process ids in $PIDS_FILE once all run
sleep 300 &
launcher=$!
sleep 300 &
echo "$launcher $!" > "$PIDS_FILE.new" && mv "$PIDS_FILE.new" "$PIDS_FILE"
wait
"""


@pytest.mark.timeout(60)
def test_an_interrupt_during_spark_submit_stops_its_whole_process_group(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C during ``sluice land`` killed nothing: the hook's reference was dropped before
    the kill, and spark-submit's JVM and driver went on to land the checkpoint."""
    binary = tmp_path / "spark-submit"
    binary.write_text(SPARK_SUBMIT_SHAPE)
    binary.chmod(0o755)
    pids_file = tmp_path / "pids"
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", connection("local[2]", "client"))
    spec = SparkJobSpec(
        application="/repo/spark_jobs/land.py",
        application_args=[],
        name="interrupted",
        conf={},
        env_vars={"PIDS_FILE": str(pids_file)},
        py_files=None,
    )
    job = SparkSubmitJob({**spec.hook_arguments(), "spark_binary": str(binary)})

    def interrupt_once_started() -> None:
        wait_until(pids_file.exists, timeout=30, what="spark-submit's children")
        os.kill(os.getpid(), signal.SIGINT)  # as Ctrl-C: KeyboardInterrupt in the main thread

    # Python's own SIGINT handler (a shell's background job starts with SIGINT ignored).
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        interrupter = threading.Thread(target=interrupt_once_started, daemon=True)
        interrupter.start()
        with pytest.raises(KeyboardInterrupt):
            job.submit(spec.application)
        interrupter.join(timeout=30)
    finally:
        signal.signal(signal.SIGINT, previous)

    children = [int(pid) for pid in pids_file.read_text().split()]
    wait_until(
        lambda: not any(running(pid) for pid in children), timeout=20, what="the children gone"
    )


def running(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie is not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


PARITY_CONNECTIONS = {
    **CLUSTER_MASTERS,
    "yarn-queue": connection("yarn", "cluster", queue="etl"),
    "local": connection("local[2]", "client"),
    "standalone": json.dumps({"conn_type": "spark", "host": "spark://master", "port": 7077}),
    "no-connection": None,
}


@pytest.mark.parametrize("name", list(PARITY_CONNECTIONS))
def test_the_shown_command_is_the_one_the_provider_runs(
    monkeypatch: pytest.MonkeyPatch, submitted: list[Submitted], name: str
) -> None:
    """The command shown before a submit is made from the job's arguments and the connection
    read by the provider's rules (its public surface only): it must be the command the pinned
    provider builds, wherever the job goes."""
    document = PARITY_CONNECTIONS[name]
    if document is None:
        monkeypatch.delenv("AIRFLOW_CONN_SPARK_DEFAULT", raising=False)
    else:
        monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", document)
    spec = SparkJobSpec(**{**SPEC.__dict__, "env_vars": {"PYSPARK_PYTHON": "/venv/bin/python"}})
    arguments = {**spec.hook_arguments(), "executor_memory": "2g", "spark_binary": "spark-submit"}
    job = SparkSubmitJob(arguments)

    job.submit(spec.application)

    (run,) = submitted
    token = run.env[SUBMIT_ID_ENV]  # in spark-submit's environment, whatever the master
    ran: list[str] = []
    for argument in run.argv:
        if argument == f"spark.yarn.appMasterEnv.{SUBMIT_ID_ENV}={token}" or argument == (
            f"spark.kubernetes.driverEnv.{SUBMIT_ID_ENV}={token}"
        ):
            ran.pop()  # its --conf: the token of a submit is not shown before it
        else:
            ran.append(argument)
    assert job.command(spec.application) == masked_arguments(ran)
