"""spark-submit of a landing job through the Spark provider's ``SparkSubmitHook``, the
metastore URL kept off its command line.

The job's driver needs the metastore URL (the lake catalog's database, password included). How
the provider's hook passes a spec's ``env_vars`` depends on the master:

* local, a standalone master: in spark-submit's environment only. The URL travels as
  ``SLUICE_METASTORE_URL`` there, as it always did (a process's environment is readable by its
  user only).
* YARN: as ``--conf spark.yarn.appMasterEnv.NAME=VALUE`` too; Kubernetes: as ``--conf
  spark.kubernetes.driverEnv.NAME=VALUE`` only. That is spark-submit's command line, which
  ``ps`` and the task's log show.

For YARN and Kubernetes masters the URL is therefore written to a file instead, created 0600
in a new 0700 temporary folder for the length of the submit and removed after it, and the
driver gets the file's path in ``SLUICE_METASTORE_URL_FILE`` (``spark_jobs/land.py`` reads
it): in client mode the path itself (the driver is spark-submit's child on this machine, and
gets the spec's ``env_vars`` in its environment whatever the master); in cluster mode the file
travels with ``--files`` and the variable names it relative to the driver's working directory,
where YARN and Kubernetes (Spark 3.4 and later) put such files. A Kubernetes cluster needs
``spark.kubernetes.file.upload.path`` for ``--files`` of local files, as for any.

Three members of the provider's hook that it keeps private are read here, because it has no
public form of them and writing them again would fork its connection rules: ``_connection``
(the master and deploy mode it resolved: where ``env_vars`` go), ``_build_spark_submit_command``
(the command shown, masked, before the submit) and ``_submit_sp`` (spark-submit's process, whose
tree an interrupt stops). ``tests/pipeline_core/landing/test_submit.py`` runs each of them
against the pinned provider.
"""

from __future__ import annotations

import functools
import os
import secrets
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any

import psutil

from pipeline_core.config._secrets import MASK, looks_secret, mask_url_passwords
from pipeline_core.landing._spec import METASTORE_URL_ENV

if TYPE_CHECKING:
    from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook

METASTORE_URL_FILE_ENV = "SLUICE_METASTORE_URL_FILE"
"""The landing job's driver reads the metastore URL from the file this names, when it is set
(``SLUICE_METASTORE_URL`` otherwise)."""
URL_FILE_PLACEHOLDER = "<file written at submit, mode 0600>"
"""How :meth:`SparkSubmitJob.command` names the URL's file, which exists only while the job is
submitted."""
_REAP_TIMEOUT_S = 10.0  # how long a kill waits for spark-submit to be gone


class SparkSubmitJob:
    """A :class:`~pipeline_core.landing.JobSubmitter` running one landing job through the
    provider's ``SparkSubmitHook`` built from ``arguments`` (its keyword arguments:
    ``SparkJobSpec.hook_arguments`` and any other), with the metastore URL of
    ``arguments["env_vars"]`` kept off the command line (see the module doc).

    ``default_master``: the master when the hook's connection (``conn_id``, ``spark_default``
    unless given) is not defined anywhere Airflow looks; ``None`` keeps the provider's own
    default, YARN. ``sluice land`` gives ``local[*]``: a checkout lands on this machine's
    cores with no Airflow connection set up.

    One instance runs one job at a time; :meth:`on_kill` may be called from any thread.
    """

    def __init__(self, arguments: Mapping[str, Any], *, default_master: str | None = None) -> None:
        self._arguments = {**arguments, "env_vars": dict(arguments.get("env_vars") or {})}
        self._hook_class = _hook_class(default_master)
        url = self._arguments["env_vars"].get(METASTORE_URL_ENV)
        self._url = None if url is None else str(url)
        self._target: tuple[bool, bool] | None = None
        self._hook: SparkSubmitHook | None = None

    def _where(self) -> tuple[bool, bool]:
        """Whether the hook would put ``env_vars`` on the command line (a YARN or Kubernetes
        master), and whether the driver runs on the cluster (deploy mode ``cluster``), as the
        provider resolves its connection."""
        if self._target is None:
            env = {k: v for k, v in self._arguments["env_vars"].items() if k != METASTORE_URL_ENV}
            resolved = self._hook_class(**{**self._arguments, "env_vars": env})._connection
            master = str(resolved.get("master") or "")
            self._target = (
                "yarn" in master or "k8s" in master,
                resolved.get("deploy_mode") == "cluster",
            )
        return self._target

    def hook(self, url_file: str | None = None) -> SparkSubmitHook:
        """The provider's hook for the job; for a YARN or Kubernetes master, the metastore URL
        replaced by the path of ``url_file`` (a placeholder when ``None``)."""
        return self._hook_class(**self._hook_arguments(url_file))

    def _hook_arguments(self, url_file: str | None) -> dict[str, Any]:
        on_command_line, cluster = self._where()
        if self._url is None or not on_command_line:
            return self._arguments
        path = url_file or URL_FILE_PLACEHOLDER
        env = {k: v for k, v in self._arguments["env_vars"].items() if k != METASTORE_URL_ENV}
        arguments = {**self._arguments, "env_vars": env}
        if cluster:
            env[METASTORE_URL_FILE_ENV] = Path(path).name
            arguments["files"] = ",".join(f for f in (self._arguments.get("files"), path) if f)
        else:
            env[METASTORE_URL_FILE_ENV] = path
        return arguments

    def command(self, application: str) -> list[str]:
        """spark-submit's command line for ``application``, each argument masked
        (:func:`masked_arguments`); the URL's file is named by a placeholder."""
        return masked_arguments(self.hook()._build_spark_submit_command(application))

    def command_line(self, application: str) -> str:
        return shlex.join(self.command(application))

    def submit(self, application: str = "") -> None:
        """Run spark-submit and wait for it (the provider's ``submit``: raises when it
        fails). The URL's file, if any, is removed when it returns or raises."""
        on_command_line, cluster = self._where()
        if self._url is None or not on_command_line:
            self._run(self.hook(), application, None)
            return
        with private_file(self._url, "metastore") as path:
            arguments = self._hook_arguments(str(path))
            env = None
            if not cluster:  # Kubernetes client mode: the hook gives the driver no env_vars
                env = {**os.environ, **{k: str(v) for k, v in arguments["env_vars"].items()}}
            self._run(self._hook_class(**arguments), application, env)

    def _run(self, hook: SparkSubmitHook, application: str, env: dict[str, str] | None) -> None:
        self._hook = hook
        try:
            if env is None:
                hook.submit(application)
            else:
                hook.submit(application, env=env)
        except BaseException:  # an interrupt while it runs: nothing of the job outlives us
            process = getattr(hook, "_submit_sp", None)
            if process is not None and process.poll() is None:
                _kill(hook)
            raise
        finally:
            self._hook = None

    def on_kill(self) -> None:
        hook = self._hook
        if hook is not None:
            _kill(hook)


def _kill(hook: SparkSubmitHook) -> None:
    """Stop spark-submit and everything it started.

    spark-submit's process tree (the launcher JVM ``spark-class`` starts, the Python driver the
    SparkSubmit JVM starts, the driver's Python workers) is frozen first, top down, so that no
    process in it can start another unseen or be orphaned out of reach; then the provider's kill
    runs (spark-submit itself; on a cluster, the driver or the application), and the rest of the
    tree gets SIGKILL. spark-submit stays in its caller's process group, so that a supervisor
    signalling the group (Airflow's task supervisor does) reaches it too."""
    process = getattr(hook, "_submit_sp", None)
    tree = _frozen_tree(process.pid) if process is not None and process.poll() is None else []
    try:
        hook.on_kill()
    finally:
        for member in tree:
            with suppress(psutil.Error):
                member.kill()
    if process is not None:
        with suppress(subprocess.TimeoutExpired):
            process.wait(timeout=_REAP_TIMEOUT_S)


def _frozen_tree(pid: int) -> list[psutil.Process]:
    """Process ``pid`` and its descendants, each stopped (SIGSTOP) before its children are
    listed; those already gone are left out."""
    try:
        pending = [psutil.Process(pid)]
    except psutil.Error:
        return []
    frozen: dict[int, psutil.Process] = {}
    while pending:
        member = pending.pop()
        if member.pid in frozen:
            continue
        try:
            member.suspend()
            children = member.children()
        except psutil.Error:
            continue  # gone already, or not ours to stop
        frozen[member.pid] = member
        pending.extend(children)
    return list(frozen.values())


def masked_arguments(arguments: list[str]) -> list[str]:
    """A command line fit for logs: every URL's secrets masked (``mask_url_passwords``), and
    the value of every ``--conf`` setting whose name looks secret (``...secret.key=***``)."""
    masked = []
    for index, argument in enumerate(arguments):
        shown = mask_url_passwords(argument)
        name, equals, value = shown.partition("=")
        if index and arguments[index - 1] == "--conf" and equals and value and looks_secret(name):
            shown = f"{name}={MASK}"
        masked.append(shown)
    return masked


@contextmanager
def private_file(text: str, name: str) -> Iterator[Path]:
    """A file holding ``text``, readable by this user only: created 0600 (exclusively, never
    through a link) in a new 0700 temporary folder, both removed on leaving. Its name starts
    with ``name`` and is unique."""
    folder = Path(tempfile.mkdtemp(prefix="sluice-"))
    path = folder / f"{name}-{secrets.token_hex(8)}"
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(descriptor, "w", encoding="utf-8") as file:
            file.write(text)
        yield path
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _hook_class(default_master: str | None) -> type[SparkSubmitHook]:
    from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook

    return SparkSubmitHook if default_master is None else _defaulted_hook(default_master)


@functools.cache
def _defaulted_hook(master: str) -> type[SparkSubmitHook]:
    """The provider's hook, with a connection of type spark on ``master`` for a connection id
    Airflow does not know (``BaseHook.get_connection`` raising ``AirflowNotFoundException``)."""
    from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook
    from airflow.sdk import Connection
    from airflow.sdk.exceptions import AirflowNotFoundException

    class DefaultedSparkSubmitHook(SparkSubmitHook):
        @classmethod
        def get_connection(cls, conn_id: str) -> Connection:
            try:
                return super().get_connection(conn_id)
            except AirflowNotFoundException:
                return Connection(conn_id=conn_id, conn_type="spark", host=master)

    return DefaultedSparkSubmitHook
