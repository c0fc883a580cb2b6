"""spark_jobs.connect: the landing job's sessions on a real Spark Connect server, and the
counts the landing observes in its write jobs there.

Each test's client runs in a child process (``run_connect_client``): the suite's own process
holds the classic SparkSession.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from spark_jobs.connect import _with_session_id, landing_session_id
from tests.support.jvm import landing_jar
from tests.support.spark_connect import run_connect_client

CLIENT = """
import json
import pyarrow as pa
from spark_jobs.connect import close_session, connect_session

url, first, second = {url!r}, {first!r}, {second!r}


def probe(spark):
    # What the server's Python workers import of the session's archive.
    def read(batches):
        import sluice_probe

        for _ in batches:
            yield pa.RecordBatch.from_pylist([{{"value": sluice_probe.VALUE}}])

    return spark.range(1).mapInArrow(read, "value long").first()["value"]


seen = []
for name, archive in [("a", first), ("b", first), ("c", second)]:
    spark = connect_session(url, name, [archive])
    seen.append([spark.session_id, probe(spark), spark.conf.get("spark.sql.session.timeZone")])
    close_session(spark)
spark = connect_session(url, "d", [second])
spark.stop()  # releases the session: the server closes it for good
spark = connect_session(url, "e", [second])
seen.append([spark.session_id, probe(spark), spark.conf.get("spark.sql.session.timeZone")])
close_session(spark)
print(json.dumps(seen))
"""


OBSERVING_CLIENT = """
import json
from datetime import datetime, timezone
from pyspark.sql import Observation, SparkSession
from spark_jobs.formats import parse, rejected_files
from spark_jobs.lake import write_files

spark = SparkSession.builder.remote({url!r}).create()
good = b'203.0.113.7 - - [22/Nov/2026:10:00:01 +0000] "GET / HTTP/1.1" 200 612 "-" "-"'
sealed = datetime(2026, 11, 22, tzinfo=timezone.utc)
lines = [
    ("a" * 16, 0, good, "web-1", 1),
    ("a" * 16, 100, b"garbage", "web-1", 1),
    ("b" * 16, 0, good, "web-2", 1),
    ("c" * 16, 0, good, "web-1", 2),
    ("c" * 16, 100, good, "web-1", 2),
]
rows = spark.createDataFrame(
    [(f, o, line, h, c, "access", sealed, None) for f, o, line, h, c in lines],
    "file_fingerprint string, byte_offset long, line binary, host string, "
    "checkpoint_id long, source string, sealed_at timestamp, line_bytes long",
)
rejected = Observation()
parsed = parse(rows, "nginx_combined", rejected=rejected)[0]
out = write_files(
    parsed, {folder!r}, "event_time", ("host", "file_fingerprint"), checkpoints=[1, 2]
)
print(json.dumps({{
    "rows": sorted([list(key), count] for key, count in out.rows.items()),
    "rejected": sorted(rejected_files(rejected)),
    "files": sorted(out.files),
}}))
spark.stop()
"""


def probe_archive(folder: Path, name: str, value: int) -> str:
    path = folder / name
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("sluice_probe.py", f"VALUE = {value}\n")
    return str(path)


def test_the_session_id_is_named_by_the_archives_and_the_generation() -> None:
    first = landing_session_id(["/data/spark/spark_jobs-aaaa.zip"])

    assert first == landing_session_id(["/elsewhere/spark_jobs-aaaa.zip"])
    assert first != landing_session_id(["/data/spark/spark_jobs-bbbb.zip"])
    assert first != landing_session_id(["/data/spark/spark_jobs-aaaa.zip"], 1)


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("sc://127.0.0.1:15002", "sc://127.0.0.1:15002/;session_id=S"),
        ("sc://db:15002/", "sc://db:15002/;session_id=S"),
        ("sc://db:15002/;token=t;session_id=old", "sc://db:15002/;token=t;session_id=S"),
    ],
)
def test_the_session_id_is_added_to_the_url(url: str, expected: str) -> None:
    assert _with_session_id(url, "S") == expected


@pytest.mark.slow
@pytest.mark.spark
@pytest.mark.timeout(600)
def test_landings_share_a_session_per_archive_and_another_archive_gets_its_own(
    spark_connect_url: str, tmp_path: Path
) -> None:
    first = probe_archive(tmp_path, "spark_jobs-1111.zip", 1)
    second = probe_archive(tmp_path, "spark_jobs-2222.zip", 2)

    code = CLIENT.format(url=spark_connect_url, first=first, second=second)
    seen = json.loads(run_connect_client(code)[-1])

    assert seen == [
        [landing_session_id([first]), 1, "UTC"],
        [landing_session_id([first]), 1, "UTC"],  # the same warm session
        [landing_session_id([second]), 2, "UTC"],  # a changed archive: a session of its own
        [landing_session_id([second], 1), 2, "UTC"],  # the next of the series, once closed
    ]


JVM_CLIENT = """
import json
from datetime import datetime, timezone
from pipeline_core.staging_contract import Segment
from spark_jobs.connect import close_session, connect_session
from spark_jobs.formats import nginx_scanner
from spark_jobs.staging import SegmentReader, SegmentRow, read_lines, segment_reader

url, part, jar = {url!r}, {part!r}, {jar!r}
rows = [
    SegmentRow(part, 3, "web-1", datetime(2026, 11, 25, tzinfo=timezone.utc), segment)
    for segment in [Segment("f" * 16, 100, 0, 9, 3), Segment("g" * 16, 0, 9, 4, 1)]
]
seen = {{}}
for name, jars in [("without", []), ("with", [jar]), ("again", [jar])]:
    spark = connect_session(url, name, [], jars)
    reader = segment_reader(spark, [part])
    lines = read_lines(spark, rows, 2, reader).select("file_fingerprint", "byte_offset", "line")
    found = sorted([r[0], r[1], r[2].decode()] for r in lines.collect())
    seen[name] = [reader.value, nginx_scanner(spark).value, found]
    close_session(spark)
print(json.dumps(seen))
"""


@pytest.mark.slow
@pytest.mark.spark
@pytest.mark.timeout(600)
def test_a_session_given_the_jar_reads_local_parts_in_the_server_jvm(
    spark_connect_url: str, tmp_path: Path
) -> None:
    part = tmp_path / "part-access-00000.lines"
    part.write_bytes(b"a\nbb\nccc\ndddd")
    jar = landing_jar()
    assert jar is not None

    code = JVM_CLIENT.format(url=spark_connect_url, part=str(part), jar=str(jar))
    seen = json.loads(run_connect_client(code)[-1])

    lines = [["f" * 16, 100, "a"], ["f" * 16, 102, "bb"], ["f" * 16, 105, "ccc"]]
    lines.append(["g" * 16, 0, "dddd"])
    # "again": a second landing in the shared session, which has the jar already
    assert seen == {
        "without": ["python", "regex", lines],
        "with": ["jvm", "jvm", lines],
        "again": ["jvm", "jvm", lines],
    }


@pytest.mark.slow
@pytest.mark.spark
@pytest.mark.timeout(600)
def test_a_write_job_on_spark_connect_returns_the_counts_it_observed(
    spark_connect_url: str, tmp_path: Path
) -> None:
    """``DataFrame.observe`` on Spark Connect: the metrics of a write come back with it."""
    code = OBSERVING_CLIENT.format(url=spark_connect_url, folder=str(tmp_path / "lake"))

    seen = json.loads(run_connect_client(code)[-1])

    assert seen == {
        "rows": [[[1], 2], [[2], 2]],
        "rejected": [[1, "web-1", "a" * 16]],
        "files": [1, 2],
    }
