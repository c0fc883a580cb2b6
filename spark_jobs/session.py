"""What the landing asks of its SparkSession, alike on a classic session and on Spark Connect.

A Spark Connect session has no ``SparkContext`` (no RDDs, accumulators, broadcast variables
nor JVM), so the landing reads what it needs from the session's configuration only:
``session_cores`` (the tasks a stage runs at once) and ``is_local`` (a ``local`` master, which
runs the job's few shuffles in as many partitions as cores).
"""

from __future__ import annotations

import contextlib
import os
import re
import weakref
from collections.abc import Mapping
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

_LOCAL_MASTER = re.compile(r"local(?:\[(?P<threads>\d+|\*)(?:,\d+)?\])?")
_PROBE_ROWS = 1 << 16
"""Rows of the ``spark.range`` whose partitions show a cluster's default parallelism."""
_probed: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()


def is_local(spark: SparkSession) -> bool:
    """The session's master is ``local``, ``local[N]`` or ``local[*]`` (with or without
    retries)."""
    return _LOCAL_MASTER.fullmatch(_master(spark)) is not None


def session_cores(spark: SparkSession) -> int:
    """The tasks ``spark`` runs at once: ``spark.default.parallelism`` when it is set, else
    the threads of a local master (the machine's cores for ``local[*]``), else the partitions
    Spark gives a ``spark.range`` (its scheduler's default parallelism; one small job, once per
    session)."""
    given = _conf(spark, "spark.default.parallelism")
    if given:
        return max(1, int(given))
    local = _LOCAL_MASTER.fullmatch(_master(spark))
    if local is not None:
        threads = local.group("threads")
        if threads is None:
            return 1
        if threads == "*":
            return os.cpu_count() or 1
        return max(1, int(threads))
    try:
        return _probed[spark]
    except (KeyError, TypeError):
        pass
    probe = spark.range(_PROBE_ROWS).select(F.spark_partition_id().alias("partition"))
    row = probe.agg(F.max("partition").alias("last")).first()
    cores = 1 if row is None or row["last"] is None else int(row["last"]) + 1
    with contextlib.suppress(TypeError):  # a session without weak references: probed each time
        _probed[spark] = cores
    return cores


def share_environment(spark: SparkSession, variables: Mapping[str, str]) -> bool:
    """Hand ``variables`` to the Python workers of ``spark``'s executors (an object store's
    endpoint and credentials): on a classic session they join ``SparkContext.environment``,
    which Spark sends with each Python function of the jobs defined after (never in its
    settings, UI or event logs). A Spark Connect session cannot: its server's workers have the
    server's environment. Returns whether they were handed (``True`` when there are none)."""
    if not variables:
        return True
    try:
        context = spark.sparkContext
    except Exception:  # Spark Connect: no SparkContext (PySparkNotImplementedError)
        return False
    context.environment.update(variables)
    return True


def _master(spark: SparkSession) -> str:
    return _conf(spark, "spark.master") or ""


def _conf(spark: SparkSession, key: str) -> str | None:
    value = spark.conf.get(key, None)
    return None if value is None else str(value)
