"""Sessions of a Spark Connect server for the landing job (its driver side only).

``connect_session`` opens the session a landing runs in, ``close_session`` leaves it. Landings
of one version of the job share one server session (``landing_session_id``), for two reasons:
the server starts Python workers, and keeps a Python daemon, per session, so a session per
landing would start them cold every time and leave a daemon behind each; and the shared
session's workers, warm from the landings before, import the archive of that version (its
name holds a hash of its content), while an archive of other content gets a session of its own.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Sequence

from pyspark.errors import PySparkException
from pyspark.sql import SparkSession
from pyspark.sql.connect.client.retries import DefaultPolicy

from pipeline_core.errors import LandingError
from pipeline_core.staging_contract import LAKE_SQL_CONF


def retry_policy() -> DefaultPolicy:
    """How the landing's driver retries a Spark Connect server it cannot reach: waits of 50 ms
    growing fourfold to 10 s, eight of them, about 45 s in all, enough for a supervisor to
    restart a server that died as the landing began. The client's default retries for at least
    10 minutes: a server killed during a landing held the landing (and its Airflow task) that
    long before it failed, although an execution the server lost cannot be resumed."""
    return DefaultPolicy(
        max_retries=8, backoff_multiplier=4.0, initial_backoff=50, max_backoff=10_000
    )


MAX_SESSION_GENERATIONS = 1000
"""Sessions of one version of the job that the server may have closed (idle past its
``spark.connect.session.manager.defaultSessionTimeout``) before a landing gives up; a closed
session's id cannot be opened again, so the next of its series is used."""
_SESSION_CLOSED = "INVALID_HANDLE.SESSION_CLOSED"
_ARTIFACT_EXISTS = "ARTIFACT_ALREADY_EXISTS"
_SESSION_NAMESPACE = uuid.UUID("5e1c3a9d-7f0b-4c1e-9a57-1a2d5c0b7e42")


def connect_session(
    url: str, app_name: str, py_files: Sequence[str] = (), jars: Sequence[str] = ()
) -> SparkSession:
    """The session of the Spark Connect server at ``url`` (``sc://host:port``, optionally with
    ``;`` parameters) for a landing shipping ``py_files`` (added as Python artifacts) and
    ``jars`` (the landing's Java functions, added as a jar artifact), with ``LAKE_SQL_CONF``
    set. Close it with :func:`close_session`.

    Raises:
        LandingError: the server closed every session of the series.
        PySparkException: the server cannot be reached, or refused the session.
    """
    for generation in range(MAX_SESSION_GENERATIONS):
        session_id = landing_session_id([*py_files, *jars], generation)
        # No option on the builder: creating the session calls nothing on the server, so the
        # first call (the settings) is already made under the landing's retry policy.
        spark = SparkSession.builder.remote(_with_session_id(url, session_id)).create()
        spark.client.set_retry_policies([retry_policy()])
        try:
            for key, value in LAKE_SQL_CONF.items():
                spark.conf.set(key, value)
        except PySparkException as exc:
            if exc.getCondition() != _SESSION_CLOSED:
                raise
            continue
        with contextlib.suppress(PySparkException):  # a core setting: the server may refuse it
            spark.conf.set("spark.app.name", app_name)
        if py_files:
            spark.addArtifacts(*py_files, pyfile=True)
        for jar in jars:
            _add_jar(spark, jar)
        return spark
    raise LandingError(
        f"Spark Connect: the server closed all {MAX_SESSION_GENERATIONS} sessions of this "
        "version of the landing job; restart it"
    )


def _add_jar(spark: SparkSession, jar: str) -> None:
    """Add ``jar`` to the session's artifacts, unless an earlier landing sharing the session
    added it (a jar's name holds a hash of its content: the same name is the same jar; the
    server refuses to overwrite an artifact)."""
    try:
        spark.addArtifacts(jar)
    except PySparkException as exc:
        if exc.getCondition() != _ARTIFACT_EXISTS:
            raise


def landing_session_id(py_files: Sequence[str], generation: int = 0) -> str:
    """The id (a UUID) of the Spark Connect session the landings shipping ``py_files`` (and
    jars) share: named by the files' names (the archive's and the jar's hold a hash of their
    content) and
    ``generation``, the how-manieth session of the series it is."""
    names = "\n".join(sorted(os.path.basename(path) for path in py_files))
    return str(uuid.uuid5(_SESSION_NAMESPACE, f"{names}\n#{generation}"))


def close_session(spark: SparkSession) -> None:
    """Close the client of a :func:`connect_session` session, leaving the server's session
    (and its warm Python workers) for the next landing; a classic session is stopped."""
    if hasattr(spark, "release_session_on_close"):
        spark.release_session_on_close = False
    spark.stop()


def _with_session_id(url: str, session_id: str) -> str:
    """``url`` naming the session ``session_id`` (instead of any it named)."""
    base, _, parameters = url.partition(";")
    kept = [p for p in parameters.split(";") if p and not p.startswith("session_id=")]
    return base.rstrip("/") + "/;" + ";".join([*kept, f"session_id={session_id}"])
