"""The one SparkSession of a test run: ``local[2]``, UTC, few shuffle partitions, no UI, and
the jar of the landing's Java functions (``spark_jobs.jvm_functions``).

Register the fixture by importing it into a conftest (``from tests.support.spark import
spark``) or by listing this module in ``pytest_plugins``. Every test that uses it is marked
``@pytest.mark.spark``. Sessions are per JVM, so a run never has more than one.
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession

from tests.support.jvm import landing_jar

SPARK_TEST_CONF = {
    "spark.master": "local[2]",
    "spark.app.name": "sluice-tests",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
}


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    """A local SparkSession shared by the whole test run; stopped at its end."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    with tempfile.TemporaryDirectory(prefix="sluice-spark-") as scratch:
        builder = SparkSession.builder.config("spark.sql.warehouse.dir", scratch).config(
            "spark.local.dir", scratch
        )
        for key, value in SPARK_TEST_CONF.items():
            builder = builder.config(key, value)
        jar = landing_jar()
        if jar is not None:  # the landing's Java functions, as spark-submit gets it
            builder = builder.config("spark.jars", str(jar))
        session = builder.getOrCreate()
        session.sparkContext.setLogLevel("ERROR")
        try:
            yield session
        finally:
            session.stop()
