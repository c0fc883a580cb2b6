"""The JVMs a test run starts (the SparkSession, spark-submit, Spark Connect and standalone
servers, ``javac``) run with the client compiler alone, the serial collector and, once made,
a class data archive of Spark's classes.

A test's JVM lives for seconds on a few thousand rows: the optimizing compiler's threads and
the parallel collector's cost it CPU it never earns back. With ``make test``'s two lanes on 2
cores that CPU is the other lane's time. A spark-submit of a small job measured 36 s of CPU
(22 s wall) as the JVM starts by default and 19 s (18 s wall) so; a 5-million-row job was 15 %
slower in wall time and used 22 % less CPU. Benchmarks (``bench/``) do not use this.

Most of the rest of a Spark JVM's start is loading and verifying some 15,000 classes. Java's
class data sharing keeps them parsed and verified in a file mapped at start
(``-XX:SharedArchiveFile``): ``python -m tests.support.jvm`` writes that archive once per Java
and pyspark (``make test`` does so while lint runs), by landing a staged checkpoint with
spark-submit under ``-XX:ArchiveClassesAtExit``. The landing test's spark-submit measured 53 s
of CPU (43 s wall) without it and 42 s (33 s wall) with it. A JVM whose class path does not
start with the archived one (``javac``, another virtualenv's Spark) ignores the archive; its
messages about that are turned off, since the JVM writes them to standard output.

``JAVA_TOOL_OPTIONS`` is read by every JVM the run starts, through any launcher; a value set
by the developer is kept.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pyspark

QUICK_START_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
REPO = Path(__file__).resolve().parents[2]
ARCHIVES = REPO / "data" / "jvm"
QUIET_ARCHIVE = "-Xlog:cds=off,cds+dynamic=off"
ARCHIVE_TIMEOUT_SECONDS = 600.0


def quick_start_jvms() -> None:
    """Have the JVMs this process starts from now on use :data:`QUICK_START_OPTIONS` and the
    class data archive, if :func:`write_class_archive` made it."""
    archive = class_archive()
    options = QUICK_START_OPTIONS
    if archive.is_file():
        options += f" -XX:SharedArchiveFile={archive} {QUIET_ARCHIVE}"
    os.environ.setdefault("JAVA_TOOL_OPTIONS", options)


def class_archive() -> Path:
    """Where the archive of this Java's and this pyspark's classes is (made or not): an
    archive is only valid for the JVM and the jars it was made with."""
    return ARCHIVES / f"spark-{_java_and_spark()}.jsa"


def landing_jar() -> Path | None:
    """The jar of the landing's Java functions, compiled once for this Java and pyspark
    (``javac`` costs some 8 s of CPU) and shared by every test process of every run: the
    tests' session, their pipelines' landings, the archive's warm-up. ``java_functions_jar``
    names it by its sources' hash and writes it whole; None without a ``javac``."""
    from pipeline_core.landing import java_functions_jar

    return java_functions_jar(ARCHIVES / "jars" / _java_and_spark())


def _java_and_spark() -> str:
    """A digest naming this Java and this pyspark's jars."""
    java = shutil.which("java", path=_java_path())
    identity = "\n".join(
        (
            str(Path(java).resolve()) if java else "",
            str(Path(pyspark.__file__).parent / "jars"),
            pyspark.__version__,
        )
    )
    return hashlib.sha256(identity.encode()).hexdigest()[:16]


def _java_path() -> str:
    java_home = os.environ.get("JAVA_HOME")
    path = os.environ.get("PATH", "")
    return f"{java_home}/bin{os.pathsep}{path}" if java_home else path


def write_class_archive() -> Path:
    """Land a staged checkpoint with spark-submit under ``-XX:ArchiveClassesAtExit`` and keep
    the archive it leaves (replaced whole, never half-written); returns its path."""
    from pipeline_core.lake import LakeLocation
    from pipeline_core.metastore import Metastore
    from spark_jobs import land
    from tests.spark_jobs.support import spark_submit_landing, stage

    target = class_archive()
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="sluice-jvm-archive-") as scratch:
        folder = Path(scratch)
        url = f"sqlite:///{folder / 'sluice.db'}"
        Metastore.open(url).close()
        lake = LakeLocation(url, folder / "lake", "warm_up")
        staged = stage(folder / "staging", 1)
        jar = landing_jar()
        written = target.with_name(f"{target.stem}.{os.getpid()}.part")
        env = {
            **os.environ,
            "PYSPARK_PYTHON": sys.executable,
            "PYSPARK_DRIVER_PYTHON": sys.executable,
            land.METASTORE_URL_ENV: url,
            "JAVA_TOOL_OPTIONS": f"{QUICK_START_OPTIONS} -XX:ArchiveClassesAtExit={written}",
        }
        command = spark_submit_landing(staged, lake, jar, "warm-up")
        done = subprocess.run(
            command,
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=ARCHIVE_TIMEOUT_SECONDS,
            check=False,
        )
        if done.returncode != 0 or not written.is_file():
            written.unlink(missing_ok=True)
            raise RuntimeError(
                f"spark-submit exited {done.returncode} without a class data archive:\n"
                + done.stderr[-3000:]
            )
        os.replace(written, target)
    for stale in target.parent.glob("spark-*.jsa"):  # of another Java or pyspark
        if stale != target:
            stale.unlink(missing_ok=True)
    return target


def main() -> int:
    """``python -m tests.support.jvm``: make the class data archive unless it exists."""
    archive = class_archive()
    if archive.is_file():
        print(f"jvm: class data archive {archive} (made before)")
        return 0
    try:
        write_class_archive()
    except (OSError, RuntimeError, subprocess.TimeoutExpired) as exc:
        print(f"jvm: no class data archive, the tests' JVMs start without one: {exc}")
        return 0
    print(f"jvm: class data archive {archive} made")
    return 0


if __name__ == "__main__":
    sys.exit(main())
