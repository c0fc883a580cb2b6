"""spark_jobs.session: what the landing reads of its session, from its configuration only."""

from __future__ import annotations

import os
from typing import Any, cast

import pytest
from pyspark.sql import SparkSession

from spark_jobs import session as session_module
from spark_jobs.session import is_local, session_cores, share_environment


class ConfiguredSession:
    """A session that only has a configuration (what the functions may read)."""

    def __init__(self, **conf: str) -> None:
        self.conf = self
        self._values = {key.replace("_", "."): value for key, value in conf.items()}

    def get(self, key: str, default: Any = None) -> Any:
        return self._values.get(key, default)


def session(**conf: str) -> SparkSession:
    return cast(SparkSession, ConfiguredSession(**conf))


@pytest.mark.parametrize(
    ("master", "cores"),
    [
        ("local", 1),
        ("local[3]", 3),
        ("local[3,2]", 3),
        ("local[*]", os.cpu_count() or 1),
        ("local[*,4]", os.cpu_count() or 1),
    ],
)
def test_a_local_master_runs_as_many_tasks_as_its_threads(master: str, cores: int) -> None:
    assert session_cores(session(spark_master=master)) == cores
    assert is_local(session(spark_master=master))


def test_the_default_parallelism_wins_when_it_is_set() -> None:
    given = session(spark_master="local[2]", spark_default_parallelism="6")

    assert session_cores(given) == 6


@pytest.mark.parametrize("master", ["spark://m:7077", "yarn", "k8s://https://api:443", ""])
def test_a_cluster_master_is_not_local(master: str) -> None:
    assert not is_local(session(spark_master=master))


@pytest.mark.spark
@pytest.mark.timeout(120)
def test_a_cluster_without_a_default_parallelism_is_asked_through_a_range(
    spark: SparkSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The suite's session is local[2]; seen as a cluster master, the range's partitions
    still say 2."""
    seen_as_cluster = {"spark.master": "spark://m:7077", "spark.default.parallelism": None}
    monkeypatch.setattr(session_module, "_conf", lambda _, key: seen_as_cluster[key])

    assert session_cores(spark) == 2


class ConnectLikeSession:
    """A session without a SparkContext, as a Spark Connect session is."""

    @property
    def sparkContext(self) -> Any:
        raise NotImplementedError("no SparkContext on Spark Connect")


@pytest.mark.spark
def test_variables_are_handed_to_the_python_workers_of_a_classic_session(
    spark: SparkSession,
) -> None:
    name = "SLUICE_TEST_SHARED_VARIABLE"

    assert share_environment(spark, {name: "handed"})

    def read(_: Any) -> list[str | None]:
        return [os.environ.get(name)]

    try:
        assert spark.sparkContext.parallelize([0], 1).flatMap(read).collect() == ["handed"]
    finally:
        spark.sparkContext.environment.pop(name, None)


def test_a_spark_connect_session_cannot_be_handed_variables() -> None:
    connect = cast(SparkSession, ConnectLikeSession())

    assert not share_environment(connect, {"AWS_REGION": "eu-west-1"})
    assert share_environment(connect, {})
