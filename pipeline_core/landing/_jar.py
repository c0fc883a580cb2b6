"""The jar of the landing's Java functions (``spark_jobs/jvm``), compiled where it is submitted.

``java_functions_jar`` compiles the Java sources shipped with the package
(``sluice.spark.SegmentLines``, ``sluice.spark.NginxFields``) once per version with the JDK's
``javac`` against pyspark's own jars, into a jar named by the hash of the sources, beside the
``--py-files`` archive of ``spark_jobs``. spark-submit gets it as ``--jars``, a Spark Connect
session as an artifact, the test and bench sessions as ``spark.jars``;
``spark_jobs.jvm_functions`` registers the functions. Without a ``javac`` (a JRE only) there
is no jar: the landing reads segments in Python workers and parses nginx lines with Spark's
regular expressions.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
import zipfile
from pathlib import Path

JAVA_SOURCES = Path(__file__).resolve().parents[2] / "spark_jobs" / "jvm"
JAVA_RELEASE = "17"
"""The Java release the classes are compiled for: Spark 4's minimum."""


class JarBuildError(RuntimeError):
    """``javac`` failed on the function's source (its output is the message)."""


def java_functions_jar(folder: Path, *, write: bool = True) -> Path | None:
    """The jar of the landing's Java functions in ``folder``, compiled on first use (named by
    the hash of their source, so built once per version); ``None`` without a ``javac`` (a JRE
    only) or without the source. ``write``: False only names the jar (a plan).

    Raises:
        JarBuildError: ``javac`` failed.
    """
    javac = _javac()
    if javac is None:
        return None
    sources = sorted(JAVA_SOURCES.rglob("*.java"))
    if not sources:  # an installation without the source: no Java functions
        return None
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
                JAVA_RELEASE,
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


def _javac() -> str | None:
    java_home = os.environ.get("JAVA_HOME")
    if java_home and os.access(Path(java_home) / "bin" / "javac", os.X_OK):
        return str(Path(java_home) / "bin" / "javac")
    return shutil.which("javac")


def _spark_jars() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent / "jars"
