"""Segments split into lines in the JVM: the Java function ``sluice.spark.SegmentLines``.

The landing reads the segments of local part files this way (``lines_in_jvm``): the executor's
JVM reads each segment's bytes itself and splits them into lines, so the lines never cross into
a Python worker and back (``spark_jobs.staging.read_segments``, kept for part files in an
object store, which the JVM has no filesystem for, and for a session without the function).
Both readers follow one contract: the same lines, offsets, checks and error messages.

The function's source ships with the package (``spark_jobs/jvm/``); ``segment_lines_jar``
compiles it once per version with the JDK's ``javac`` against pyspark's own jars, into a jar
named by the hash of its source. A session gets the jar when it starts (``spark.jars``, or
spark-submit's ``--jars``: ``pipeline_core.landing.landing_job_spec`` adds it), or on Spark
Connect as an artifact of the landing's session; ``enable_segment_lines`` then registers the
function and says whether it can be used. Without a JDK (a JRE only) there is no jar, and the
landing reads every segment in Python workers, as fast as before this module.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import shutil
import subprocess
import tempfile
import weakref
import zipfile
from pathlib import Path
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, BinaryType, LongType, StructField, StructType

SEGMENT_LINES_FUNCTION = "sluice_segment_lines"
"""The name the function is registered under in a session."""
SEGMENT_LINES_CLASS = "sluice.spark.SegmentLines"
JAVA_SOURCES = Path(__file__).resolve().parent / "jvm"
LINES_TYPE = ArrayType(
    StructType(
        [
            StructField("byte_offset", LongType(), nullable=False),
            StructField("line", BinaryType(), nullable=False),
        ]
    ),
    containsNull=False,
)
"""What the function returns for a segment: its lines, each with its offset in the source
file."""
log = logging.getLogger(__name__)
_enabled: weakref.WeakKeyDictionary[Any, bool] = weakref.WeakKeyDictionary()


class JarBuildError(RuntimeError):
    """``javac`` failed on the function's source (its output is the message)."""


def segment_lines_jar(folder: Path, *, write: bool = True) -> Path | None:
    """The jar of ``sluice.spark.SegmentLines`` in ``folder``, compiled on first use (named by
    the hash of its source, so built once per version); ``None`` without a ``javac`` (a JRE
    only). ``write``: False only names the jar (a plan).

    Raises:
        JarBuildError: ``javac`` failed.
    """
    javac = _javac()
    if javac is None:
        return None
    sources = sorted(JAVA_SOURCES.rglob("*.java"))
    digest = hashlib.sha256()
    for source in sources:
        digest.update(source.relative_to(JAVA_SOURCES).as_posix().encode())
        digest.update(source.read_bytes())
    jar = Path(folder) / f"sluice-spark-{digest.hexdigest()[:16]}.jar"
    if write and not jar.exists():
        jar.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix=".sluice-jar-", dir=jar.parent) as scratch:
            classes = Path(scratch) / "classes"
            command = [
                javac,
                "--release",
                "17",
                "-nowarn",
                "-cp",
                str(_spark_jars() / "*"),
                "-d",
                str(classes),
                *map(str, sources),
            ]
            done = subprocess.run(command, capture_output=True, text=True, check=False)
            if done.returncode != 0:
                raise JarBuildError(f"javac failed on {JAVA_SOURCES}:\n{done.stderr.strip()}")
            temporary = Path(scratch) / jar.name
            with zipfile.ZipFile(temporary, "w", zipfile.ZIP_DEFLATED) as zipped:
                for path in sorted(classes.rglob("*.class")):
                    zipped.write(path, path.relative_to(classes).as_posix())
            os.replace(temporary, jar)
    return jar


def enable_segment_lines(spark: SparkSession) -> bool:
    """Register the function in ``spark`` (once per session); whether it can be used: the
    session has its jar (``spark.jars``, ``--jars``, or a Spark Connect artifact)."""
    with contextlib.suppress(KeyError, TypeError):
        return _enabled[spark]
    try:
        spark.udf.registerJavaFunction(SEGMENT_LINES_FUNCTION, SEGMENT_LINES_CLASS, LINES_TYPE)
        spark.range(1).select(_probe()).collect()  # Spark Connect resolves it on first use
        enabled = True
    except Exception as exc:  # the class is not on the session's classpath
        log.info(
            "segments are read in Python workers: %s is not available (%s)",
            SEGMENT_LINES_CLASS,
            str(exc).splitlines()[0] if str(exc) else type(exc).__name__,
        )
        enabled = False
    with contextlib.suppress(TypeError):  # a session without weak references: checked each time
        _enabled[spark] = enabled
    return enabled


def lines_in_jvm(segments: DataFrame) -> DataFrame:
    """The lines of ``segments`` (``spark_jobs.staging.SEGMENT_SCHEMA`` rows of local part
    files) as ``spark_jobs.staging.LINE_SCHEMA`` rows, read and split by the function: a row
    per line, with its segment's batch columns. The function must be enabled in the session
    (:func:`enable_segment_lines`)."""
    lines = F.call_function(
        SEGMENT_LINES_FUNCTION,
        F.col("path"),
        F.col("part_offset"),
        F.col("length"),
        F.col("start_offset"),
        F.col("lines"),
    )
    return segments.select(
        "file_fingerprint",
        F.inline(lines),
        "checkpoint_id",
        "host",
        "sealed_at",
        "line_bytes",
    )


def _probe() -> Column:
    nothing = F.lit(None).cast("long")
    return F.call_function(
        SEGMENT_LINES_FUNCTION, F.lit(None).cast("string"), nothing, nothing, nothing, nothing
    ).isNull()


def _javac() -> str | None:
    java_home = os.environ.get("JAVA_HOME")
    if java_home and os.access(Path(java_home) / "bin" / "javac", os.X_OK):
        return str(Path(java_home) / "bin" / "javac")
    return shutil.which("javac")


def _spark_jars() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent / "jars"
