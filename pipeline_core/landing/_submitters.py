"""The one way a landing job is submitted, from ``sluice land`` and from the landing task
alike: on a Spark Connect server when one is named, else by spark-submit through the Spark
provider's hook (:class:`SparkSubmitJob`), under :class:`SubmitSettings` laid over the job's
spec."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from pipeline_core.landing._connect import JobLog, JobSubmitter, SparkConnectSubmitter
from pipeline_core.landing._spec import SparkJobSpec, spark_submit_binary
from pipeline_core.landing._submit import SparkSubmitJob

SPARK_DEFAULT_CONN_ID = "spark_default"


class SubmitLog(JobLog, Protocol):
    """Where the job's output goes and what does not apply is said (a ``logging.Logger``, a
    task's ``self.log``)."""

    def warning(self, msg: Any, /, *args: Any) -> Any: ...


@dataclass(frozen=True)
class SubmitSettings:
    """How a landing job runs, over what its spec says.

    ``spark_connect``: the Spark Connect server's ``sc://`` URL to land on; the job's driver
    then runs here with ``env_vars`` over the spec's, and the spark-submit settings below do
    not apply. Otherwise spark-submit through the provider's hook on ``conn_id``, with
    ``conf`` and ``env_vars`` laid over the spec's, ``spark_binary`` (default: the one
    :func:`spark_submit_binary` finds), further hook arguments ``hook_arguments`` and, when
    Airflow knows no ``conn_id``, ``default_master`` (``None``: the provider's default,
    YARN)."""

    spark_connect: str | None = None
    conn_id: str = SPARK_DEFAULT_CONN_ID
    conf: Mapping[str, Any] = field(default_factory=dict)
    env_vars: Mapping[str, Any] = field(default_factory=dict)
    spark_binary: str | None = None
    hook_arguments: Mapping[str, Any] = field(default_factory=dict)
    default_master: str | None = None

    @property
    def submit_only(self) -> list[str]:
        """The settings given that only spark-submit uses."""
        given = {
            "conf": self.conf,
            "spark_binary": self.spark_binary,
            "hook_arguments": self.hook_arguments,
        }
        return [name for name, value in given.items() if value]


def landing_submitter(
    spec: SparkJobSpec, settings: SubmitSettings | None = None, *, logger: SubmitLog | None = None
) -> JobSubmitter:
    """The submitter of ``spec``'s job under ``settings``; on Spark Connect, the job's output
    goes to ``logger``, which is also warned of spark-submit settings that do not apply."""
    settings = settings or SubmitSettings()
    if settings.spark_connect is not None:
        if settings.submit_only and logger is not None:
            logger.warning(
                "%s are spark-submit's: on Spark Connect they do not apply (the server has "
                "its own settings)",
                ", ".join(settings.submit_only),
            )
        env = {key: str(value) for key, value in settings.env_vars.items()}
        return SparkConnectSubmitter(spec, settings.spark_connect, env_vars=env, logger=logger)
    arguments = {
        **spec.hook_arguments(),
        "conn_id": settings.conn_id,
        "conf": {**spec.conf, **settings.conf},
        "env_vars": {**spec.env_vars, **settings.env_vars},
        "spark_binary": settings.spark_binary or spark_submit_binary(),
        **settings.hook_arguments,
    }
    return SparkSubmitJob(arguments, default_master=settings.default_master)
