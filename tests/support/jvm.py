"""The JVMs a test run starts (the SparkSession, spark-submit, Spark Connect and standalone
servers, ``javac``) run with the client compiler alone and the serial collector.

A test's JVM lives for seconds on a few thousand rows: the optimizing compiler's threads and
the parallel collector's cost it CPU it never earns back. With ``make test``'s two lanes on 2
cores that CPU is the other lane's time. A spark-submit of a small job measured 36 s of CPU
(22 s wall) as the JVM starts by default and 19 s (18 s wall) so; a 5-million-row job was 15 %
slower in wall time and used 22 % less CPU. Benchmarks (``bench/``) do not use this.

``JAVA_TOOL_OPTIONS`` is read by every JVM the run starts, through any launcher; a value set
by the developer is kept.
"""

from __future__ import annotations

import os

QUICK_START_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


def quick_start_jvms() -> None:
    """Have the JVMs this process starts from now on use :data:`QUICK_START_OPTIONS`."""
    os.environ.setdefault("JAVA_TOOL_OPTIONS", QUICK_START_OPTIONS)
