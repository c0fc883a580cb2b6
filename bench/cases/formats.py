"""Case 18: landing three log formats, each against a Spark job parsing the same lines.

Input, per format: a log a real program wrote once, repeated whole to 1 GiB (``--quick``
32 MiB), so that every copy parses and frames into events as the program's own output does.
(One run of the three at 1 GiB took 9.5 minutes on the 2-core development machine, the
repeated logs' first writing included.)

* ``python_logging``: Python's ``logging`` (the project's log-writing program,
  ``tests/support/python_log_program.py``, as case 14 runs it: ``%(asctime)s %(levelname)s
  %(name)s: %(message)s``, half the records ``logger.exception`` tracebacks), read with
  ``multiline: {preset: python}``;
* ``spark_log4j``: a real PySpark job's log4j2 log in Spark's default pattern (the failing job
  of ``tests/support/spark_log_job.py``, run once by ``spark-submit``: executor and driver
  exceptions, Python tracebacks inside Java ones), read with ``multiline: {preset: java}``;
* ``syslog_rfc5424``: what rsyslogd wrote (``RSYSLOG_SyslogProtocol23Format``) of messages
  util-linux's ``logger`` sent it over TCP (``tests/support/syslog_programs.py``): header
  fields, structured data with escapes, UTF-8 text; one message a line.

Sluice: the file collected once into a sealed checkpoint (``Collector.run_once``, reported in
the note, not in the ratio), then landed in-process on the suite's ``local[2]`` session and
committed (case 3's ``land_and_commit``: part checks, events parsed into the format's columns,
event ids, rejects, counts, the Iceberg commit, the metastore commit). Every event must land as
a row, and the collector must have sealed as many events as the program wrote records.

Spark's floor, on the same session, in the same run: ``spark.read.text`` of the same file, one
regular expression per format whose groups ``regexp_extract`` takes, ``try_to_timestamp``, and
for the syslog structured data ``regexp_extract_all`` with ``map_from_arrays``; the format
table's columns (``event_time`` and the format's, cast to their types; a column the lines do
not give is null) written as Parquet partitioned by ``event_date``. Spark's text reader reads
lines, not events: a line of a traceback or a stack trace is a row of its own (its text the
message, every other column null), so the floor neither joins events nor splits a message
from its exception; nor does it make event ids, rejects, checks or a commit.

Before anything is timed, each format's log of ``WARM_SIZE`` is landed and its floor run once
on the same session. The ratio is the landing's wall time over the floor's, run by run.
Target: at most 1.3 x for each format.
"""

from __future__ import annotations

import functools
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench import common
from bench.cases import lake, multiline
from bench.common import Context, RepeatedLog, Row, Stat, paired_ratio

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

TARGET = 1.3
SIZE = 1024 * common.MiB
QUICK_SIZE = 32 * common.MiB
WARM_SIZE = 2 * common.MiB
"""Each format's log landed once (and its floor run) before anything is timed: the session's
first landing of a format pays its classes' loading and code generation (about 7 s of the
first python_logging landing on 2026-11-30), which the floor, run after it, did not."""
FloorParse = Callable[["Column"], dict[str, "Column"]]
"""A floor's parse of a line (``value``): the format's columns it gives, and ``event_time``."""


@dataclass(frozen=True)
class Format:
    """One format of the case: its log, how the source reads it, and the floor's parse."""

    name: str
    """The format (``SourceFormat``) and the name of its source."""
    label: str
    log: Callable[[int], RepeatedLog]
    """The data set of a size in bytes."""
    source: dict[str, Any]
    """The source's keys besides its name, paths and format."""
    floor: FloorParse


def run(ctx: Context) -> list[Row]:
    size = QUICK_SIZE if ctx.quick else SIZE
    logs = {fmt.name: fmt.log(size) for fmt in FORMATS}  # before the session: Spark's seed job
    warm = {fmt.name: fmt.log(WARM_SIZE) for fmt in FORMATS}
    spark = ctx.spark()
    for fmt in FORMATS:  # the session's first landing and floor of each format, untimed
        work = ctx.work("formats-warm")
        lake.land_and_commit(spark, lake.lake_location(work), collect(work, fmt, warm[fmt.name]))
        spark_floor(spark, fmt, warm[fmt.name].path, ctx.work("formats-floor"))
    rows = [measure(ctx, spark, fmt, logs[fmt.name]) for fmt in FORMATS]
    for name in ("formats-sluice", "formats-floor", "formats-warm"):
        ctx.work(name)
    return rows


def measure(ctx: Context, spark: SparkSession, fmt: Format, log: RepeatedLog) -> Row:
    """``ctx.sizes.runs`` rounds of collect, land and the floor on ``fmt``'s log."""
    megabytes = common.size_of(log.path) / 1e6
    collect_s: list[float] = []
    land_s: list[float] = []
    floor_s: list[float] = []
    for _ in range(ctx.sizes.runs):
        work = ctx.work("formats-sluice")
        collected = collect(work, fmt, log)
        landing = functools.partial(
            lake.land_and_commit, spark, lake.lake_location(work), collected
        )
        land_s.append(common.timed(landing))
        collect_s.append(collected.seconds)
        common.warm(log.path)
        floor_s.append(spark_floor(spark, fmt, log.path, ctx.work("formats-floor")))
    ratio = paired_ratio(land_s, floor_s)
    per_line = "" if log.events == log.lines else ", each line of a multiline event a row"
    return Row(
        case="18",
        measure=f"{fmt.label} landing in-process, {megabytes:.0f} MB",
        sluice=Stat(land_s, "s"),
        baseline=Stat(floor_s, "s"),
        baseline_name="Spark floor: read.text + one pattern",
        ratio=ratio,
        target=f"<= {TARGET:.1f} x floor",
        met=ratio.median <= TARGET,
        note=f"{log.events:,} events in {log.lines:,} lines; collect (not in the ratio) "
        f"{Stat(collect_s, 's').text()}; floor: lines, not events{per_line}",
        details={
            "mb": megabytes,
            "events": log.events,
            "lines": log.lines,
            "collect_s": collect_s,
            "land_s": land_s,
            "floor_s": floor_s,
        },
    )


def collect(work: Path, fmt: Format, log: RepeatedLog) -> common.Collected:
    """The log collected into one sealed checkpoint by a pipeline of one source reading it as
    ``fmt``; it must hold the events the program wrote."""
    common.warm(log.path)
    keys = {"name": fmt.name, "format": fmt.name, **fmt.source}
    collected = common.collect_once(common.pipeline_config(work, log.path, source=keys))
    if collected.events != log.events:
        raise AssertionError(f"{fmt.name}: sealed {collected.events} events of {log.events}")
    return collected


# ---------------------------------------------------------------------------------- floors


def spark_floor(spark: SparkSession, fmt: Format, path: Path, work: Path) -> float:
    """Spark's floor for ``fmt`` (see the module doc); returns its wall time in seconds."""

    def parse(lines: DataFrame) -> DataFrame:
        return lines.select(*table_columns(fmt.name, fmt.floor(lines["value"])))

    return lake.timed_floor(spark, path, work, parse)


def table_columns(fmt: str, parsed: Mapping[str, Column]) -> list[Column]:
    """``event_time`` and the columns of ``fmt``'s table in order, cast to their types, from
    ``parsed``; those it lacks are null."""
    from pyspark.sql import functions as F

    from pipeline_core.formats import format_spec

    spec = format_spec(fmt)
    unknown = set(parsed) - {"event_time", *spec.column_types()}
    if unknown:
        raise ValueError(f"{fmt} has no columns {sorted(unknown)}")
    return [
        parsed["event_time"].cast("timestamp").alias("event_time"),
        *(
            parsed.get(column.name, F.lit(None)).cast(column.type.value).alias(column.name)
            for column in spec.columns
        ),
    ]


def record_floor(pattern: str, time_layout: str) -> FloorParse:
    """The floor's parse of records of a time, a level, a logger and a message (Python's
    ``logging``, log4j): ``pattern``'s four groups, each extracted; a line it does not match
    (a traceback's, a stack trace's) is a row whose message is the line."""
    from pyspark.sql import functions as F

    def parse(line: Column) -> dict[str, Column]:
        def group(number: int) -> Column:
            return F.regexp_extract(line, pattern, number)

        written = group(1)
        record = written != ""
        return {
            "event_time": F.try_to_timestamp(written, F.lit(time_layout)),
            "level": F.when(record, group(2)),
            "logger": F.when(record, group(3)),
            "message": F.when(record, group(4)).otherwise(line),
            "event_lines": F.lit(1),
        }

    return parse


PYTHON_FLOOR = r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) ([A-Z]+) (\S+?): (.*)$"
"""``%(asctime)s %(levelname)s %(name)s: %(message)s``."""
LOG4J_FLOOR = r"^(\d\d/\d\d/\d\d \d\d:\d\d:\d\d) ([A-Z]+) (\S+?): (.*)$"
"""``%d{yy/MM/dd HH:mm:ss} %p %c{1}: %m``."""
SYSLOG_FLOOR = (
    r"^<(\d{1,3})>(\d{1,3}) (\S+) (\S+) (\S+) (\S+) (\S+) "
    r'(-|(?:\[[^\]"]*(?:"(?:[^"\\]|\\.)*"[^\]"]*)*\])+)(?: (.*))?$'
)
"""``<PRI>VERSION TIMESTAMP HOSTNAME APP-NAME PROCID MSGID STRUCTURED-DATA [MSG]``, the
structured data's quoted values taken whole (they may hold ``]``)."""
SD_ELEMENT_FLOOR = r'\[([^ \]"]+)((?: [^ ="\]]+="(?:[^"\\]|\\.)*")*)\]'
SD_PARAM_FLOOR = r' ([^ ="\]]+)="((?:[^"\\]|\\.)*)"'


def syslog_floor(line: Column) -> dict[str, Column]:
    """The floor's parse of an RFC 5424 message (:data:`SYSLOG_FLOOR`)."""
    from pyspark.sql import functions as F

    from spark_jobs.formats._syslog import SEVERITY_KEYWORDS

    def group(number: int) -> Column:
        return F.regexp_extract(line, SYSLOG_FLOOR, number)

    def unless_nil(number: int) -> Column:
        return F.nullif(group(number), F.lit("-"))

    priority = F.nullif(group(1), F.lit("")).cast("int")
    text = group(9)
    return {
        "event_time": F.try_to_timestamp(group(3), F.lit("yyyy-MM-dd'T'HH:mm:ss[.SSSSSS]XXX")),
        "facility": (priority / 8).cast("int"),
        "severity": priority % 8,
        "level": F.element_at(F.array(*map(F.lit, SEVERITY_KEYWORDS)), priority % 8 + 1),
        "version": group(2),
        "hostname": unless_nil(4),
        "app_name": unless_nil(5),
        "proc_id": unless_nil(6),
        "msg_id": unless_nil(7),
        "structured_data": structured_data_floor(group(8)),
        "message": F.when(text != "", F.regexp_replace(text, r"^\uFEFF", "")),
    }


def structured_data_floor(text: Column) -> Column:
    """``STRUCTURED-DATA`` as a map keyed ``<SD-ID>.<PARAM-NAME>``, values unescaped."""
    from pyspark.sql import functions as F

    elements = F.regexp_extract_all(text, F.lit(SD_ELEMENT_FLOOR), 0)

    def params(number: int, each: Callable[[Column, Column], Column]) -> Column:
        return F.flatten(
            F.transform(
                elements,
                lambda element: F.transform(
                    F.regexp_extract_all(element, F.lit(SD_PARAM_FLOOR), number),
                    lambda value: each(element, value),
                ),
            )
        )

    keys = params(
        1,
        lambda element, name: F.concat(
            F.regexp_extract(element, SD_ELEMENT_FLOOR, 1), F.lit("."), name
        ),
    )
    values = params(2, lambda _, value: F.regexp_replace(value, r'\\(["\\\]])', "$1"))
    return F.map_from_arrays(keys, values)


# ---------------------------------------------------------------------------------- logs


def spark_log(size: int) -> RepeatedLog:
    """``bench/data/spark-log4j-<MiB>m/app.log``: the failing PySpark job's log4j2 log."""

    def write_seed(seed: Path) -> int:
        from tests.support.log_programs import run_failing_spark_job

        job = seed.with_name("job")
        logs = run_failing_spark_job(job)
        shutil.move(logs.log4j.path, seed)
        shutil.rmtree(job)
        return len(logs.log4j.events)

    return common.repeated_log(
        f"spark-log4j-{size // common.MiB}m", {"job": "spark_log_job"}, size, write_seed
    )


SYSLOG_MESSAGES = 2_500
"""Messages each of :func:`syslog_senders` sends (``logger`` reads them from a file)."""
SYSLOG_TEXTS = (
    "GET /api/v1/items?page={n} 200 in {n} ms",
    "user alice logged in from 192.0.2.{n}",
    "cache miss for key session:{n}, loading from the store",
    "Zürich ☀ café: job {n} done in {n}.25 s",
    'request {n} failed: upstream "pool-a" closed the connection [retrying]',
    "queue depth {n}, lag 0.{n} s, 3 workers busy of 4",
)


def syslog_senders() -> list[Any]:
    """What each ``logger`` call sends: facilities, severities, tags, process and message ids,
    structured data with escapes, over TCP as RFC 5424."""
    from tests.support.syslog_programs import Sent

    def sender(tag: str, facility: int, severity: int, **keys: Any) -> Sent:
        return Sent(tag, "", rfc5424=True, tcp=True, facility=facility, severity=severity,
                    tag=tag, **keys)  # fmt: skip

    return [
        sender("web", 16, 6, pid="4711", msg_id="REQ",
               structured_data=(("req@32473", (("id", "a1"), ("path", "/a b"))),)),
        sender("auth", 10, 5, pid="812", msg_id="LOGIN"),
        sender("cache", 17, 7, structured_data=(
            ("origin", (("ip", "192.0.2.7"), ("software", "logger"))),
            ("zoo@32473", (("tiger", 'hungry "very" ] x \\ y'), ("city", "Zürich ☀"))),
        )),
        sender("cron", 9, 6, pid="1"),
        sender("kernel-ish", 1, 4, msg_id="OOM"),
        sender("db", 18, 3, pid="5432", msg_id="ERR",
               structured_data=(("db@32473", (("table", "events"), ("rows", "1000"))),)),
        sender("mailer", 2, 2, pid="25"),
        sender("batch", 19, 6, pid="99"),
    ]  # fmt: skip


def syslog_log(size: int) -> RepeatedLog:
    """``bench/data/syslog-rfc5424-<MiB>m/app.log``: what rsyslogd wrote in RFC 5424 of the
    messages ``logger`` sent it."""
    spec = {"messages": SYSLOG_MESSAGES, "senders": 8, "texts": len(SYSLOG_TEXTS)}
    return common.repeated_log(
        f"syslog-rfc5424-{size // common.MiB}m", spec, size, write_syslog_seed
    )


def write_syslog_seed(seed: Path) -> int:
    """rsyslogd's RFC 5424 file of :func:`syslog_senders`' messages, copied to ``seed``;
    returns the messages (one a line)."""
    import pytest

    from tests.support.syslog_programs import SyslogTools, Written, running_rsyslog

    try:
        tools = SyslogTools.find()
    except pytest.fail.Exception as exc:
        raise RuntimeError(str(exc)) from None
    senders = syslog_senders()
    messages = len(senders) * SYSLOG_MESSAGES
    with (
        tempfile.TemporaryDirectory(dir=seed.parent) as scratch,
        running_rsyslog(tools, Path(scratch) / "rsyslog") as rsyslog,
    ):
        for sent in senders:
            texts = Path(scratch) / f"{sent.tag}.txt"
            texts.write_text("".join(syslog_text(sent.tag, n) for n in range(SYSLOG_MESSAGES)))
            send_lines(sent.command(tools.logger, rsyslog.udp_port, rsyslog.tcp_port), texts)
        written = rsyslog.path(Written.RFC5424)
        common.wait_for(lambda: lines_in(written) >= messages, 120, "rsyslogd's RFC 5424 file")
        shutil.copyfile(written, seed)
    return messages


def send_lines(command: list[str], texts: Path) -> None:
    """Run a ``logger`` command without its message (its last two words, ``--`` and the
    text): ``logger`` sends each line of ``texts`` instead."""
    from tests.support.syslog_programs import ENVIRONMENT

    env = {**common.child_env(), **ENVIRONMENT}
    subprocess.run([*command[:-2], "--file", str(texts)], check=True, env=env, timeout=300)


def syslog_text(tag: str, number: int) -> str:
    text = SYSLOG_TEXTS[number % len(SYSLOG_TEXTS)].format(n=number)
    return f"{tag}-{number:05d} {text}\n"


def lines_in(path: Path) -> int:
    try:
        return path.read_bytes().count(b"\n")
    except FileNotFoundError:
        return 0


FORMATS = (
    Format(
        "python_logging",
        "python_logging, half tracebacks:",
        functools.partial(multiline.python_log, "tracebacks"),
        {"log_format": multiline.FORMAT, "multiline": multiline.MULTILINE},
        record_floor(PYTHON_FLOOR, "yyyy-MM-dd HH:mm:ss,SSS"),
    ),
    Format(
        "spark_log4j",
        "spark_log4j, a failing job's log:",
        spark_log,
        {"multiline": {"preset": "java"}},
        record_floor(LOG4J_FLOOR, "yy/MM/dd HH:mm:ss"),
    ),
    Format(
        "syslog_rfc5424",
        "syslog_rfc5424 (rsyslogd):",
        syslog_log,
        {},
        syslog_floor,
    ),
)
