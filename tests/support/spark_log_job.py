"""A PySpark job that fails the ways Spark jobs fail, for the logs they leave: run by
``spark-submit`` (:func:`tests.support.log_programs.run_failing_spark_job` writes its log4j2
configuration and submits it, local mode).

* A Python UDF raises on the executors (a chained exception: ``raise ... from``), and so does a
  Python function an RDD maps: Spark's log4j2 logs each task's ``PythonException`` (the Python
  traceback in its message, then the Java frames) from the executor and the task-set manager.
* A SQL expression fails on the executors (ANSI division by zero): its Java exception's message
  has the query's text and a line of carets.
* The driver logs what it got back through Python's ``logging`` (``--log``, ``--truth``: the
  ground truth, as :mod:`tests.support.python_log_program` writes it): pyspark's
  ``PythonException`` and ``ArithmeticException``, and a ``Py4JJavaError`` (a JVM method
  called through reflection that throws: its message holds the Java stack trace with
  ``Caused by:``).
* The driver also logs the Java exceptions themselves through log4j2 (logger ``SluiceJob``), as
  a Scala job's ``logError(message, exception)`` would: the job's ``SparkException`` (with
  ``Driver stacktrace:``, ``Caused by:`` and ``... N more``) and the reflection's
  ``InvocationTargetException``, to which the job adds a suppressed exception.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from pyspark.sql import SparkSession
from pyspark.sql.functions import col, udf

from tests.support.python_log_program import configure


def parse_source(value: str) -> int:
    """The UDF: fails for every value but ``a``, with a chained exception."""
    try:
        return {"a": 1}[value]
    except KeyError as exc:
        raise ValueError(f"cannot parse {value!r}") from exc


def checked(value: int) -> int:
    """The RDD's function: fails at 3."""
    if value == 3:
        raise RuntimeError(f"element {value} is corrupt")
    return value


def java_exception(error: BaseException) -> Any:
    """The Java throwable behind a Py4J or pyspark exception (None if there is none)."""
    seen: BaseException | None = error
    while seen is not None:
        found = getattr(seen, "java_exception", None)
        if found is not None:
            return found
        seen = seen.__cause__ or seen.__context__
    return getattr(error, "_origin", None)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--log", type=Path, required=True)
    parser.add_argument("--truth", type=Path, required=True)
    parser.add_argument("--format", required=True)
    args = parser.parse_args()
    root = configure(args.log, args.truth, args.format)
    root.setLevel(logging.INFO)  # a driver's level (py4j's DEBUG dumps its protocol)
    log = root.getChild("job")
    spark = SparkSession.builder.getOrCreate()
    jvm: Any = spark._jvm  # type: ignore[attr-defined]
    log4j = jvm.org.apache.logging.log4j.LogManager.getLogger("SluiceJob")
    try:
        frame = spark.createDataFrame([("a",), ("b",)], ["source"])
        log.info("parsing %d sources", frame.count())
        try:
            frame.select(udf(parse_source, "int")("source")).collect()
        except Exception as exc:
            log.exception("the UDF failed")
            log4j.error("stage with the UDF failed", java_exception(exc))
        try:
            spark.sparkContext.parallelize(range(5), 1).map(checked).collect()
        except Exception:
            log.exception("the RDD failed")
        try:
            spark.sql("SELECT id,\n  10 div (id\n    - 1) AS ratio\nFROM range(3)").collect()
        except Exception:
            log.exception("the query failed")
        try:
            spark.range(3).select((col("id") / (col("id") - 1)).alias("ratio")).collect()
        except Exception:
            log.exception("the frame failed")
        corrupt = args.log.parent / "input.gz"
        corrupt.write_bytes(b"not gzip at all\n")
        try:
            spark.sparkContext.textFile(str(corrupt)).collect()
        except Exception as exc:
            log.exception("reading %s failed", corrupt.name)
            thrown = java_exception(exc)
            thrown.addSuppressed(jvm.java.lang.IllegalStateException("closing the reader failed"))
            log4j.error(f"reading {corrupt.name} failed", thrown)
        try:
            spark.sparkContext.textFile(str(corrupt.with_name("missing.txt"))).collect()
        except Exception:
            log.exception("reading missing.txt failed")
        log.info("done")
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
