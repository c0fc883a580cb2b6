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

Only the provider's public surface is used: the hook's constructor, ``submit`` (whose keyword
arguments reach ``subprocess.Popen``), ``on_kill`` and ``get_connection``. Where the job goes
(the master and deploy mode: where ``env_vars`` travel) is read from the connection by the
provider's rules (:func:`submit_target`); the command shown before a submit is made from the
job's arguments (:func:`spark_submit_command`); and the processes of a submit are found by a
token in their environment (``SLUICE_SUBMIT_ID``), which spark-submit's JVM, the driver and the
driver's workers inherit, so that an interrupt stops all of them.
"""

from __future__ import annotations

import functools
import os
import secrets
import shlex
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass
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


@dataclass(frozen=True)
class SubmitTarget:
    """Where a spark-submit sends its job, as the provider resolves the hook's connection:
    ``master`` (``yarn``, ``local[*]``, ``spark://...``, ``k8s://...``), ``deploy_mode``
    (``client``, ``cluster``; ``None``: spark-submit's default, client), the YARN ``queue`` and
    the Kubernetes ``namespace`` (``None``: not given)."""

    master: str
    deploy_mode: str | None = None
    queue: str | None = None
    namespace: str | None = None

    @property
    def env_on_command_line(self) -> bool:
        """Whether the provider passes ``env_vars`` as ``--conf`` settings (YARN: the
        application master's environment; Kubernetes: the driver's), shown by ``ps``."""
        return self.is_yarn or self.is_kubernetes

    @property
    def is_yarn(self) -> bool:
        return "yarn" in self.master

    @property
    def is_kubernetes(self) -> bool:
        return "k8s" in self.master

    @property
    def cluster(self) -> bool:
        """Whether the driver runs on the cluster, not as spark-submit's child here."""
        return self.deploy_mode == "cluster"


def submit_target(hook_class: type[SparkSubmitHook], arguments: Mapping[str, Any]) -> SubmitTarget:
    """The target of a hook made of ``arguments`` (its ``conn_id``, ``spark_default`` unless
    given; its ``deploy_mode``, ``yarn_queue`` and ``conf``), by the provider's rules: a
    connection of type ``spark`` whose host is a whole master (``yarn``, ``local[2]``,
    ``k8s://https://...``) is that master, any other is ``<type>://<host>``, with its port if
    it has one; the deploy mode and queue are the hook's, else the connection's
    ``deploy-mode`` and ``queue`` extras; the namespace is the ``spark.kubernetes.namespace``
    setting, else the ``namespace`` extra; a connection Airflow does not know is YARN.
    ``tests/pipeline_core/landing/test_submit.py`` holds these rules to the pinned
    provider's."""
    from airflow.sdk.exceptions import AirflowException

    conf = arguments.get("conf") or {}
    try:
        connection = hook_class.get_connection(arguments.get("conn_id") or "spark_default")
    except AirflowException:
        return SubmitTarget(
            "yarn",
            arguments.get("deploy_mode"),
            arguments.get("yarn_queue"),
            conf.get("spark.kubernetes.namespace"),
        )
    host = connection.host or ""
    if connection.conn_type == "spark" and host and ("://" in host or not connection.port):
        master = host
    else:
        master = f"{connection.conn_type}://{host}"
    if connection.port:
        master = f"{master}:{connection.port}"
    extra = connection.extra_dejson if isinstance(connection.extra_dejson, dict) else {}
    return SubmitTarget(
        master,
        arguments.get("deploy_mode") or extra.get("deploy-mode"),
        arguments.get("yarn_queue") or extra.get("queue"),
        conf.get("spark.kubernetes.namespace") or extra.get("namespace"),
    )


_COMMAND_FLAGS = (
    ("files", "--files"),
    ("py_files", "--py-files"),
    ("archives", "--archives"),
    ("driver_class_path", "--driver-class-path"),
    ("jars", "--jars"),
    ("packages", "--packages"),
    ("exclude_packages", "--exclude-packages"),
    ("repositories", "--repositories"),
    ("num_executors", "--num-executors"),
    ("total_executor_cores", "--total-executor-cores"),
    ("executor_cores", "--executor-cores"),
    ("executor_memory", "--executor-memory"),
    ("driver_memory", "--driver-memory"),
    ("keytab", "--keytab"),
    ("principal", "--principal"),
    ("proxy_user", "--proxy-user"),
    ("name", "--name"),
    ("java_class", "--class"),
    ("yarn_queue", "--queue"),
    ("properties_file", "--properties-file"),
    ("deploy_mode", "--deploy-mode"),
)
"""The hook's arguments shown as spark-submit's options, in the order spark-submit's usage
lists them."""


def spark_submit_command(
    arguments: Mapping[str, Any], application: str, target: SubmitTarget
) -> list[str]:
    """The spark-submit command of a job made of the hook's ``arguments`` for ``target``
    (unmasked): its master, its settings, ``env_vars`` as the settings YARN or Kubernetes
    carry them in, its options, the application and its arguments."""
    argv = [str(arguments.get("spark_binary") or "spark-submit"), "--master", target.master]
    settings = {str(k): str(v) for k, v in (arguments.get("conf") or {}).items()}
    environment = {str(k): str(v) for k, v in (arguments.get("env_vars") or {}).items()}
    if target.is_yarn:
        settings.update({f"spark.yarn.appMasterEnv.{k}": v for k, v in environment.items()})
    elif target.is_kubernetes:
        settings.update({f"spark.kubernetes.driverEnv.{k}": v for k, v in environment.items()})
    for name, value in settings.items():
        argv += ["--conf", f"{name}={value}"]
    if target.is_kubernetes and target.namespace:
        argv += ["--conf", f"spark.kubernetes.namespace={target.namespace}"]
    shown = {**arguments, "deploy_mode": target.deploy_mode, "yarn_queue": target.queue}
    for key, flag in _COMMAND_FLAGS:
        if shown.get(key) not in (None, ""):
            argv += [flag, str(shown[key])]
    if arguments.get("verbose"):
        argv.append("--verbose")
    return [*argv, application, *(str(a) for a in arguments.get("application_args") or ())]


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
        self._target: SubmitTarget | None = None
        self._running: tuple[SparkSubmitHook, str] | None = None

    @property
    def target(self) -> SubmitTarget:
        """Where the job goes (resolved once, from the hook's connection)."""
        if self._target is None:
            self._target = submit_target(self._hook_class, self._arguments)
        return self._target

    def hook(self, url_file: str | None = None) -> SparkSubmitHook:
        """The provider's hook for the job; for a YARN or Kubernetes master, the metastore URL
        replaced by the path of ``url_file`` (a placeholder when ``None``)."""
        return self._hook_class(**self._hook_arguments(url_file))

    def _hook_arguments(self, url_file: str | None) -> dict[str, Any]:
        if self._url is None or not self.target.env_on_command_line:
            return self._arguments
        path = url_file or URL_FILE_PLACEHOLDER
        env = {k: v for k, v in self._arguments["env_vars"].items() if k != METASTORE_URL_ENV}
        arguments = {**self._arguments, "env_vars": env}
        if self.target.cluster:
            env[METASTORE_URL_FILE_ENV] = Path(path).name
            arguments["files"] = ",".join(f for f in (self._arguments.get("files"), path) if f)
        else:
            env[METASTORE_URL_FILE_ENV] = path
        return arguments

    def command(self, application: str) -> list[str]:
        """spark-submit's command line for ``application``, each argument masked
        (:func:`masked_arguments`); the URL's file is named by a placeholder."""
        return masked_arguments(
            spark_submit_command(self._hook_arguments(None), application, self.target)
        )

    def command_line(self, application: str = "") -> str:
        return shlex.join(self.command(application))

    def submit(self, application: str = "") -> None:
        """Run spark-submit and wait for it (the provider's ``submit``: raises when it
        fails). The URL's file, if any, is removed when it returns or raises."""
        if self._url is None or not self.target.env_on_command_line:
            self._run(self._arguments, application)
            return
        with private_file(self._url, "metastore") as path:
            self._run(self._hook_arguments(str(path)), application)

    def _run(self, arguments: dict[str, Any], application: str) -> None:
        token = secrets.token_hex(16)
        env_vars = {**arguments["env_vars"], SUBMIT_ID_ENV: token}
        hook = self._hook_class(**{**arguments, "env_vars": env_vars})
        kwargs: dict[str, Any] = {}
        if self.target.is_kubernetes:
            # The hook gives spark-submit no environment of its own for Kubernetes (env_vars
            # become driver settings): a client-mode driver, spark-submit's child, needs them,
            # and the token must reach spark-submit.
            env = {k: str(v) for k, v in env_vars.items()}
            kwargs["env"] = {**os.environ, **env}
        self._running = (hook, token)
        try:
            hook.submit(application, **kwargs)
        except BaseException:  # an interrupt while it runs: nothing of the job outlives us
            if _submit_processes(token):
                _kill(hook, token)
            raise
        finally:
            self._running = None

    def on_kill(self) -> None:
        running = self._running
        if running is not None:
            _kill(*running)


SUBMIT_ID_ENV = "SLUICE_SUBMIT_ID"
"""A token of one submit in spark-submit's environment, inherited by everything it starts."""


def _kill(hook: SparkSubmitHook, token: str) -> None:
    """Stop spark-submit and everything it started.

    The submit's processes (spark-submit, the launcher JVM ``spark-class`` starts, the Python
    driver the SparkSubmit JVM starts, the driver's Python workers: this process's descendants
    with ``token`` in their environment) are frozen first, top down, so that none of them can
    start another unseen or be orphaned out of reach; then the provider's kill runs
    (spark-submit itself; on a cluster, the driver or the application), and the rest get
    SIGKILL. spark-submit stays in its caller's process group, so that a supervisor signalling
    the group (Airflow's task supervisor does) reaches it too."""
    roots = _submit_processes(token)
    tree = [member for root in roots for member in _frozen_tree(root.pid)]
    try:
        hook.on_kill()
    finally:
        for member in tree:
            with suppress(psutil.Error):
                member.kill()
    psutil.wait_procs(roots, timeout=_REAP_TIMEOUT_S)


def _submit_processes(token: str) -> list[psutil.Process]:
    """This process's children started by the submit of ``token`` (spark-submit)."""
    found = []
    for child in psutil.Process().children():
        with suppress(psutil.Error):
            if child.environ().get(SUBMIT_ID_ENV) == token:
                found.append(child)
    return found


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
