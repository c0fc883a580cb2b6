"""Logs written by the real programs, with their ground truth: for the tests of multiline
events, the collector's end-to-end tests and the benchmark. A test never types a log line: it
runs a program here, in a process of its own, and gets the file the program wrote and the events
the program meant, each the exact bytes it wrote for one log record (its last newline
included), in order.

* :func:`write_python_log`: Python's ``logging`` (:mod:`tests.support.python_log_program`)
  writes a number of records, a share of them with tracebacks. :func:`start_python_logger`
  runs the same program for as long as a test needs, at a rate of records a second, so that the
  test can kill the program or rotate its log while it writes; :func:`read_truth` reads what
  it wrote so far.
* :func:`run_failing_spark_job`: a real PySpark job (:mod:`tests.support.spark_log_job`, local
  mode, by ``spark-submit``) whose Python UDF raises on the executors: Spark's log4j2 log, in
  Spark's default pattern (or, ``structured``, Spark's structured JSON logging), and the
  driver's Python log.

The ground truth comes from the program itself: every record also goes to a second handler (a
second appender) that writes it as the log's formatter (layout) formats it, one JSON object or
string a line. The two are the same formatting of the same record; the tests check that the
truth's events, put together, are the log's bytes.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support.processes import stop_group

PYTHON_PROGRAM = Path(__file__).with_name("python_log_program.py")
SPARK_JOB = Path(__file__).with_name("spark_log_job.py")

PYTHON_FORMATS = {
    "common": "%(asctime)s %(levelname)s %(name)s: %(message)s",
    "airflow2": "[%(asctime)s] {%(filename)s:%(lineno)d} %(levelname)s - %(message)s",
    "basic": "%(levelname)s:%(name)s:%(message)s",
    "level": "%(levelname)s: %(message)s",
}
"""Formats of Python's ``logging``: a common one, Airflow 2's task log, ``logging.basicConfig``'s
default (``logging.BASIC_FORMAT``), and one whose lines start like an exception's line
(``WARNING: ...`` as ``KeyError: ...``)."""
PYTHON_START_PATTERNS = {
    "common": r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} ",
    "airflow2": r"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}\] \{",
    "basic": r"(?:DEBUG|INFO|WARNING|ERROR|CRITICAL):",
    "level": r"(?:DEBUG|INFO|WARNING|ERROR|CRITICAL): ",
}
"""For each of :data:`PYTHON_FORMATS`, a ``start_pattern`` its records' first lines match."""

SPARK_PATTERN = "%d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex"
"""Spark's default log4j2 pattern (``org/apache/spark/log4j2-defaults.properties``)."""
SPARK_START_PATTERN = r"\d\d/\d\d/\d\d \d\d:\d\d:\d\d "


@dataclass(frozen=True)
class WrittenLog:
    """A log a program wrote, and its events: each the bytes it wrote for one record."""

    path: Path
    events: list[bytes]

    @property
    def lines(self) -> int:
        """How many lines the events hold."""
        return sum(event.count(b"\n") for event in self.events)


def read_truth(truth: Path) -> list[bytes]:
    """The events a ground-truth file lists so far: each line a JSON string (the record as the
    log's formatter formatted it) or a JSON object with it under ``record`` (log4j2's
    ``JsonTemplateLayout``), as the bytes the log got (UTF-8, with the log's newline). A last
    line not yet whole (the writer is writing it, or was killed) is left out."""
    events: list[bytes] = []
    if not truth.exists():
        return events
    for line in truth.read_bytes().split(b"\n")[:-1]:
        record = json.loads(line)
        if isinstance(record, dict):
            events.append(record["record"].encode())
        else:
            events.append((record + "\n").encode())
    return events


def read_truth_fields(truth: Path) -> list[dict[str, object]]:
    """The records a ground truth written with ``truth_fields`` lists: each the formatted
    record (``record``) and its attributes (``python_log_program.TruthHandler``)."""
    return [json.loads(line) for line in truth.read_bytes().split(b"\n")[:-1]]


def paired_with_truth(
    rows: list[dict[str, Any]],
    records: list[dict[str, object]],
    row_key: Callable[[dict[str, Any]], tuple[Any, ...]],
    record_key: Callable[[dict[str, object]], tuple[Any, ...]],
) -> list[tuple[dict[str, Any], dict[str, object]]]:
    """Each parsed row with the truth record of the same event, paired by ``row_key`` and
    ``record_key`` (the same fields, each as its side holds them), not by position: a JVM's two
    appenders (the log and the truth) write records two threads logged at once in either order,
    each appender under a lock of its own. Rows whose key no record shares end up paired with
    another record, and the caller's field checks fail."""
    assert len(rows) == len(records), (len(rows), len(records))
    return list(zip(sorted(rows, key=row_key), sorted(records, key=record_key), strict=True))


def _python_arguments(
    path: Path, truth: Path, fmt: str, tracebacks: float, stacks: float, multiline: float, seed: int
) -> list[str]:
    return [
        sys.executable, str(PYTHON_PROGRAM), "--log", str(path), "--truth", str(truth),
        "--format", fmt, "--tracebacks", str(tracebacks), "--stacks", str(stacks),
        "--multiline", str(multiline), "--seed", str(seed),
    ]  # fmt: skip


def write_python_log(
    path: Path,
    *,
    events: int = 1000,
    tracebacks: float = 0.1,
    stacks: float = 0.02,
    multiline: float = 0.0,
    fmt: str = PYTHON_FORMATS["common"],
    seed: int = 0,
    truth: Path | None = None,
) -> list[bytes]:
    """Have Python's ``logging`` append ``events`` records to ``path``; returns them, each the
    bytes written for it. With ``truth``, the ground truth is kept there with each record's
    attributes (:func:`read_truth_fields`).

    Args:
        tracebacks: the share of records logged with ``logger.exception`` while a failure is
            handled: a ``KeyError`` with carets, ``raise ... from``, an exception raised while
            handling another, a cause that was never raised, an ``OSError``, a
            ``SyntaxError``, a ``RecursionError``, an ``ExceptionGroup`` (Python >= 3.11), an
            exception without a message; one in ten of them with ``stack_info`` too.
        stacks: the share of warnings logged with ``stack_info=True`` (no exception).
        multiline: the share of records whose message has several lines, or whose exception's
            message has several lines and a note: lines that start like a record's (the
            presets cannot tell them from one; a ``start_pattern`` can).
        fmt: the records' format (one of :data:`PYTHON_FORMATS`, or any other).
        seed: which records are drawn: the same arguments write the same records, only their
            times differ.
    """
    if truth is not None:
        arguments = _python_arguments(path, truth, fmt, tracebacks, stacks, multiline, seed)
        command = [*arguments, "--events", str(events), "--truth-fields"]
        subprocess.run(command, check=True, timeout=600)
        return read_truth(truth)
    with tempfile.TemporaryDirectory(prefix="sluice-truth-") as scratch:
        kept = Path(scratch) / "truth.jsonl"
        arguments = _python_arguments(path, kept, fmt, tracebacks, stacks, multiline, seed)
        subprocess.run([*arguments, "--events", str(events)], check=True, timeout=600)
        return read_truth(kept)


@dataclass
class PythonLogger:
    """A Python program logging to ``path`` while a test runs (:func:`start_python_logger`); the
    records it wrote so far are in ``truth``. It leads a process group of its own."""

    process: subprocess.Popen[bytes]
    path: Path
    truth: Path

    def written(self) -> list[bytes]:
        """The records written so far (:func:`read_truth`). After a SIGKILL the log may hold a
        record more than this: the program writes a record to the log, then to the truth."""
        return read_truth(self.truth)

    def wait_for(self, count: int, timeout: float = 60.0) -> list[bytes]:
        """Wait until the program has written at least ``count`` records; returns them.

        Raises:
            TimeoutError: it had not after ``timeout`` seconds (or it ended before).
        """
        deadline = time.monotonic() + timeout
        while True:
            written = self.written()
            if len(written) >= count:
                return written
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise TimeoutError(
                    f"the logger wrote {len(written)} of {count} records "
                    f"(exit status {self.process.returncode})"
                )
            time.sleep(0.02)

    def stop(self, timeout: float = 10.0) -> list[bytes]:
        """End the program (SIGTERM: it stops after the record it is writing; SIGKILL after
        ``timeout``); returns every record it wrote."""
        stop_group(self.process, signal.SIGTERM, timeout)
        return self.written()


def start_python_logger(
    path: Path,
    truth: Path,
    *,
    rate: float = 100.0,
    events: int | None = None,
    tracebacks: float = 0.1,
    stacks: float = 0.02,
    multiline: float = 0.0,
    fmt: str = PYTHON_FORMATS["common"],
    seed: int = 0,
    reopen: bool = False,
    split_share: float = 0.0,
    split_pause: float = 0.0,
) -> PythonLogger:
    """Start Python's ``logging`` appending records to ``path``, ``rate`` a second, until it
    has written ``events`` (None: until it is stopped); the ground truth goes to ``truth``
    (appended to). Keep ``truth`` out of the folder a collector under test watches.

    Kill it with ``os.killpg(logger.process.pid, signal.SIGKILL)`` or end it with
    :meth:`PythonLogger.stop`. The log is held open by a ``logging.FileHandler`` (appending: a
    ``copytruncate`` rotation leaves it writing at the start of the truncated file) or, with
    ``reopen``, a ``logging.handlers.WatchedFileHandler``, which opens the path anew once the
    file was renamed or removed (a ``create`` rotation). ``split_share`` of the multiline
    records are written in two writes ``split_pause`` seconds apart, as a buffered appender
    writes a record larger than its buffer: a reader may find one half written. The other
    arguments are :func:`write_python_log`'s.
    """
    arguments = _python_arguments(path, truth, fmt, tracebacks, stacks, multiline, seed)
    arguments += ["--rate", str(rate)]
    if events is not None:
        arguments += ["--events", str(events)]
    if reopen:
        arguments.append("--reopen")
    if split_share:
        arguments += ["--split-share", str(split_share), "--split-pause", str(split_pause)]
    process = subprocess.Popen(arguments, start_new_session=True, stdin=subprocess.DEVNULL)
    return PythonLogger(process, path, truth)


# -- Spark ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SparkJobLogs:
    """What :func:`run_failing_spark_job` wrote: Spark's log4j2 log (``SPARK_PATTERN``) and the
    driver's Python log (``PYTHON_FORMATS["common"]``)."""

    log4j: WrittenLog
    driver: WrittenLog


def log4j2_properties(log: Path, truth: Path, pattern: str = SPARK_PATTERN) -> str:
    """A log4j2 configuration that logs at INFO to ``log`` with ``pattern``, and each record,
    formatted by the same pattern (``JsonTemplateLayout``'s ``pattern`` resolver, the
    ``log4j-layout-template-json`` jar pyspark ships), to ``truth`` as ``{"record": ...}``, one
    a line, with its ``level``, ``logger`` (the whole name), ``message``, ``exception_class``
    (absent without one) and ``millis`` (its epoch milliseconds)."""
    template = json.dumps(
        {
            "record": {"$resolver": "pattern", "pattern": pattern, "stackTraceEnabled": True},
            "level": {"$resolver": "level", "field": "name"},
            "logger": {"$resolver": "logger", "field": "name"},
            "message": {"$resolver": "message", "stringified": True},
            "exception_class": {"$resolver": "exception", "field": "className"},
            "millis": {"$resolver": "timestamp", "epoch": {"unit": "millis", "rounded": True}},
        }
    )
    layout = [
        "appender.log.layout.type = PatternLayout",
        f"appender.log.layout.pattern = {pattern}",
    ]
    return _log_and_truth(log, layout, truth, template)


SPARK_JSON_TEMPLATE = "classpath:org/apache/spark/SparkLayout.json"
"""Spark's structured logging's ``JsonTemplateLayout`` template (in ``spark-common-utils``)."""


def structured_log4j2_properties(log: Path, truth: Path) -> str:
    """A log4j2 configuration that logs at INFO to ``log`` as Spark's structured logging does
    (``JsonTemplateLayout`` with :data:`SPARK_JSON_TEMPLATE`, one JSON object a line), and each
    record to ``truth`` by a template of its own, one JSON object a line: its ``level``,
    ``logger`` (the whole name), ``message``, ``mdc``, ``exception_class`` and
    ``exception_message`` (absent without an exception), ``stack_trace`` (Java's printing of
    it) and ``millis`` (its epoch milliseconds)."""
    template = json.dumps(
        {
            "level": {"$resolver": "level", "field": "name"},
            "logger": {"$resolver": "logger", "field": "name"},
            "message": {"$resolver": "message", "stringified": True},
            "mdc": {"$resolver": "mdc"},
            "exception_class": {"$resolver": "exception", "field": "className"},
            "exception_message": {"$resolver": "exception", "field": "message"},
            "stack_trace": {
                "$resolver": "exception",
                "field": "stackTrace",
                "stackTrace": {"stringified": True},
            },
            "millis": {"$resolver": "timestamp", "epoch": {"unit": "millis", "rounded": True}},
        }
    )
    layout = [
        "appender.log.layout.type = JsonTemplateLayout",
        f"appender.log.layout.eventTemplateUri = {SPARK_JSON_TEMPLATE}",
    ]
    return _log_and_truth(log, layout, truth, template)


def _log_and_truth(log: Path, layout: list[str], truth: Path, template: str) -> str:
    """log4j2 properties logging at INFO to ``log`` with ``layout`` (its ``appender.log.layout``
    lines) and to ``truth`` with the ``JsonTemplateLayout`` event ``template``."""
    return "\n".join(
        [
            "status = warn",
            "rootLogger.level = info",
            "rootLogger.appenderRef.log.ref = log",
            "rootLogger.appenderRef.truth.ref = truth",
            "appender.log.type = File",
            "appender.log.name = log",
            f"appender.log.fileName = {log}",
            *layout,
            "appender.truth.type = File",
            "appender.truth.name = truth",
            f"appender.truth.fileName = {truth}",
            "appender.truth.layout.type = JsonTemplateLayout",
            f"appender.truth.layout.eventTemplate = {template}",
            "logger.jetty.name = org.sparkproject.jetty",
            "logger.jetty.level = warn",
            "",
        ]
    )


@pytest.fixture(scope="session")
def spark_json_job(tmp_path_factory: pytest.TempPathFactory) -> SparkJobLogs:
    """The logs of one run of the failing PySpark job with Spark's structured logging
    (:func:`run_failing_spark_job`, ``structured``), shared by the session's tests."""
    return run_failing_spark_job(tmp_path_factory.mktemp("spark-json-job"), structured=True)


@pytest.fixture(scope="session")
def spark_job(tmp_path_factory: pytest.TempPathFactory) -> SparkJobLogs:
    """The logs of one run of the failing PySpark job (:func:`run_failing_spark_job`, about
    20 s), shared by the session's tests."""
    return run_failing_spark_job(tmp_path_factory.mktemp("spark-job"))


def run_failing_spark_job(
    folder: Path, timeout: float = 600.0, *, structured: bool = False
) -> SparkJobLogs:
    """Run :mod:`tests.support.spark_log_job` with ``spark-submit`` (``local[1]``) in
    ``folder``: its log4j2 log is ``folder/spark.log``, its driver's Python log
    ``folder/driver.log`` (about 20 s; it starts a JVM and Python workers).

    With ``structured``, Spark's structured logging is on
    (``spark.log.structuredLogging.enabled``: Spark puts its context in the MDC) and the log
    is written as it writes it (:func:`structured_log4j2_properties`); the log's events are
    then its lines, and its truth (``folder/spark.truth.jsonl``) is read with
    :func:`read_truth_fields`.

    Raises:
        subprocess.CalledProcessError: the job failed (its output is in
            ``folder/spark-submit.out``).
    """
    import pyspark

    folder.mkdir(parents=True, exist_ok=True)
    log, log_truth = folder / "spark.log", folder / "spark.truth.jsonl"
    driver, driver_truth = folder / "driver.log", folder / "driver.truth.jsonl"
    for stale in (log, log_truth, driver, driver_truth):
        stale.unlink(missing_ok=True)
    configuration = folder / "log4j2.properties"
    if structured:
        configuration.write_text(structured_log4j2_properties(log, log_truth))
    else:
        configuration.write_text(log4j2_properties(log, log_truth))
    spark_home = Path(pyspark.__file__).parent
    conf = {
        "spark.master": "local[1]",
        "spark.app.name": "sluice-failing-job",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.sql.shuffle.partitions": "1",
        "spark.local.dir": str(folder / "local"),
        "spark.sql.warehouse.dir": str(folder / "warehouse"),
        "spark.driver.extraJavaOptions": f"-Dlog4j2.configurationFile=file:{configuration}",
        "spark.log.structuredLogging.enabled": str(structured).lower(),
    }
    command = [str(spark_home / "bin" / "spark-submit")]
    for key, value in conf.items():
        command += ["--conf", f"{key}={value}"]
    command += [str(SPARK_JOB), "--log", str(driver), "--truth", str(driver_truth)]
    command += ["--format", PYTHON_FORMATS["common"]]
    env = {
        **os.environ,
        "SPARK_HOME": str(spark_home),
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    with (folder / "spark-submit.out").open("wb") as out:
        subprocess.run(
            command, env=env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            cwd=folder, timeout=timeout, check=True,
        )  # fmt: skip
    events = log.read_bytes().splitlines(keepends=True) if structured else read_truth(log_truth)
    return SparkJobLogs(WrittenLog(log, events), WrittenLog(driver, read_truth(driver_truth)))
