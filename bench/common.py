"""What every case of the suite shares: sizes, data, pipeline configs, timing, processes, the
table and the JSON results.

Data is generated deterministically (fixed seeds, fixed clock) under ``bench/data`` and kept
between runs; a stamp beside each data set records its parameters, so a change regenerates it.
Every file starts with a line naming it: files never look like copies of each other (the
collector leaves a file that looks like a copy of another alone).
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from pipeline_core.testing import access_line, access_lines, wait_until

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from sqlalchemy import Engine

    from pipeline_core.metastore import Metastore

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "bench" / "data"
RESULTS = ROOT / "bench" / "results"
PYTHON = sys.executable
MiB = 1024 * 1024
MEMORY_SCRATCH = Path("/dev/shm") / "sluice-bench"
"""Where :meth:`Context.memory_work` makes its folders (emptied by :meth:`Context.close`)."""
GiB = 1024 * MiB
LINES_END = datetime(2026, 11, 22, 12, 0, tzinfo=timezone.utc)
"""Every generated line is in the hour before this (one ``event_date`` in the lake)."""
PIPELINE = "bench"
HOST = "bench"


# ---------------------------------------------------------------------------------- sizes


@dataclass(frozen=True)
class Sizes:
    """How big and how long the cases are (``FULL`` is what issue 8 asks for)."""

    runs: int
    big_file: int
    """The single large access log (cases 1, 2, 5, 6)."""
    small_files: int
    small_file: int
    """The many-files data set (cases 1, 3, 5)."""
    tail_seconds: float
    tail_rate: int
    """Bytes per second appended in case 4."""
    checkpoint_requests: int
    checkpoint_interval: float
    many_files: int
    many_file: int
    """Case 6's many-files input."""
    huge_factor: int
    """Case 6's large input, in multiples of ``big_file`` (only with ``--huge``)."""
    acker_trees: int
    events_small: int
    """Case 7: bytes of the smaller input (the larger one has ten times as many)."""


FULL = Sizes(
    runs=3,
    big_file=GiB,
    small_files=50,
    small_file=20 * MiB,
    tail_seconds=60.0,
    tail_rate=10_000_000,
    checkpoint_requests=60,
    checkpoint_interval=0.25,
    many_files=1000,
    many_file=128 * 1024,
    huge_factor=10,
    acker_trees=200_000,
    events_small=GiB // 10,
)
QUICK = Sizes(
    runs=2,
    big_file=64 * MiB,
    small_files=50,
    small_file=MiB,
    tail_seconds=10.0,
    tail_rate=10_000_000,
    checkpoint_requests=12,
    checkpoint_interval=0.25,
    many_files=1000,
    many_file=16 * 1024,
    huge_factor=10,
    acker_trees=50_000,
    events_small=4 * MiB,
)


@dataclass
class Context:
    """One invocation of the suite: its sizes, options, scratch folder and shared state."""

    sizes: Sizes
    quick: bool
    scratch: Path
    profile: bool = True
    huge: bool = False
    spark_submit: bool = True
    soak_minutes: float | None = None
    """Case 19's length (``--soak-minutes``); None: its default."""
    fleet_sizes: tuple[int, ...] = ()
    """Case 20's fleet sizes (empty: the case's own)."""
    fleet_minutes: float | None = None
    """Case 20's window per fleet size (None: the case's own)."""
    fleet_pooler: bool = False
    """Case 20's collectors reach PostgreSQL through a PgBouncer in transaction mode."""
    shared: dict[str, Any] = field(default_factory=dict)
    """Figures one case measured that another may reuse in the same run."""
    _spark: SparkSession | None = None

    def work(self, name: str) -> Path:
        """A fresh, empty folder under the scratch folder."""
        path = self.scratch / name
        shutil.rmtree(path, ignore_errors=True)
        path.mkdir(parents=True)
        return path

    def memory_work(self, name: str) -> Path:
        """A fresh, empty folder in memory (``/dev/shm``, where there is one; else as
        :meth:`work`): for a case that compares two ways of collecting and not the disk their
        staging is written to (the disk's write-back is charged to the thread that writes,
        by the gigabyte, at random on this machine). Emptied by calling it again."""
        if not MEMORY_SCRATCH.parent.is_dir() or not os.access(MEMORY_SCRATCH.parent, os.W_OK):
            return self.work(name)
        path = MEMORY_SCRATCH / name
        shutil.rmtree(path, ignore_errors=True)
        path.mkdir(parents=True)
        return path

    def spark(self) -> SparkSession:
        """The process's one SparkSession (``local[2]``), made on first use."""
        if self._spark is None:
            self._spark = make_spark(self.scratch / "spark")
        return self._spark

    def close(self) -> None:
        shutil.rmtree(MEMORY_SCRATCH, ignore_errors=True)
        if self._spark is not None:
            self._spark.stop()
            self._spark = None


def make_spark(local_dir: Path) -> SparkSession:
    """A ``local[2]`` session set up as the landing job sets up its own (``build_session``)."""
    from pyspark.sql import SparkSession

    from pipeline_core.landing import java_functions_jar
    from spark_jobs.land import build_session

    os.environ.setdefault("PYSPARK_PYTHON", PYTHON)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", PYTHON)
    local_dir.mkdir(parents=True, exist_ok=True)
    (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.log.level", "ERROR")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.local.dir", str(local_dir))
        .config("spark.sql.warehouse.dir", str(local_dir / "warehouse"))
        .config("spark.jars", str(java_functions_jar(local_dir) or ""))
        .getOrCreate()
    )
    spark = build_session("sluice-bench")
    spark.sparkContext.setLogLevel("ERROR")
    return spark


# ---------------------------------------------------------------------------------- data


class LineBlocks:
    """A fixed pool of nginx "combined" blocks (20,000 lines each) that files cycle through."""

    BLOCKS = 16
    LINES_PER_BLOCK = 20_000

    def __init__(self) -> None:
        self.blocks = [
            b"\n".join(access_lines(self.LINES_PER_BLOCK, seed=seed, end=LINES_END)) + b"\n"
            for seed in range(self.BLOCKS)
        ]

    def stream(self, start: int) -> Iterator[bytes]:
        index = start
        while True:
            yield self.blocks[index % len(self.blocks)]
            index += 1


_blocks: LineBlocks | None = None


def line_blocks() -> LineBlocks:
    global _blocks
    if _blocks is None:
        _blocks = LineBlocks()
    return _blocks


def numbered_access_line(client: str, path: str, sequence: int, stamp: str, agent: str) -> bytes:
    """An nginx "combined" line whose request path ends with its sequence number (a reader
    of the lake tells each line by it)."""
    return (
        f'{client} - - [{stamp}] "GET {path}{sequence} HTTP/1.1" 200 {sequence % 50_000} "-" '
        f'"{agent}"\n'
    ).encode()


@contextmanager
def ticking(tick: Callable[[], None], period: float, name: str) -> Iterator[None]:
    """Call ``tick`` every ``period`` seconds from a thread of its own for the block; a
    failure of ``tick`` stops the ticks and is raised when the block ends."""
    stop = threading.Event()
    failure: list[BaseException] = []

    def loop() -> None:
        next_tick = time.monotonic()
        try:
            while not stop.is_set():
                tick()
                next_tick += period
                stop.wait(max(0.0, next_tick - time.monotonic()))
        except BaseException as exc:  # raised in the caller's thread
            failure.append(exc)

    thread = threading.Thread(target=loop, name=name, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(30)
    if failure:
        raise RuntimeError(f"{name} failed") from failure[0]


def first_line(name: str) -> bytes:
    """A well-formed access line that names its file (so no two files start alike)."""
    import random

    line = access_line(random.Random(name), LINES_END)
    request_start = line.index(b'"') + 1
    method_end = line.index(b" ", request_start)
    path_end = line.index(b" ", method_end + 1)
    return line[: method_end + 1] + f"/bench/{name}".encode() + line[path_end:] + b"\n"


def write_access_log(path: Path, size: int, *, start_block: int = 0) -> int:
    """At most ``size`` bytes of whole access-log lines, starting with the file's own line."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as handle:
        written = handle.write(first_line(path.name))
        for block in line_blocks().stream(start_block):
            room = size - written
            if room <= 0:
                break
            if len(block) > room:
                block = block[: block.rfind(b"\n", 0, room) + 1]
                if not block:
                    break
            written += handle.write(block)
    return written


def _dataset(name: str, spec: dict[str, Any], build: Callable[[Path], None]) -> Path:
    """``bench/data/<name>``, built by ``build`` unless its stamp matches ``spec``."""
    folder = DATA / name
    stamp = folder / ".stamp.json"
    wanted = json.dumps({**spec, "version": 2}, sort_keys=True)
    if stamp.is_file() and stamp.read_text() == wanted:
        return folder
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    started = time.perf_counter()
    print(f"   generating {folder} ...", end="", flush=True, file=sys.stderr)
    build(folder)
    print(f" {time.perf_counter() - started:.0f} s", file=sys.stderr)
    stamp.write_text(wanted)
    return folder


def big_log(size: int) -> Path:
    """One access log of ``size`` bytes: ``bench/data/big-<MiB>m/access.log``."""

    def build(folder: Path) -> None:
        write_access_log(folder / "access.log", size)

    return _dataset(f"big-{size // MiB}m", {"size": size}, build) / "access.log"


def small_logs(count: int, size: int) -> Path:
    """``count`` access logs of ``size`` bytes in one folder (``access-NN.log``)."""

    def build(folder: Path) -> None:
        for index in range(count):
            write_access_log(folder / f"access-{index:02d}.log", size, start_block=index)

    return _dataset(f"files-{count}x{size // 1024}k", {"count": count, "size": size}, build)


def many_logs(count: int, size: int) -> Path:
    """``count`` small access logs (``f-NNNN.log``)."""

    def build(folder: Path) -> None:
        for index in range(count):
            write_access_log(folder / f"f-{index:04d}.log", size, start_block=index)

    return _dataset(f"many-{count}x{size // 1024}k", {"count": count, "size": size}, build)


def huge_log(factor: int, base: Path) -> Path:
    """``factor`` copies of ``base``'s lines behind a line of its own (made only when asked
    for, by copying within the kernel)."""

    def build(folder: Path) -> None:
        target = folder / "access.log"
        with open(base, "rb") as source, open(target, "wb") as out:
            out.write(first_line(f"huge-{factor}x"))
            out.flush()
            size = os.fstat(source.fileno()).st_size
            for _ in range(factor):
                offset = 0
                while offset < size:
                    offset += os.copy_file_range(
                        source.fileno(), out.fileno(), size - offset, offset
                    )

    folder = _dataset(f"huge-{factor}x-{base.parent.name}", {"factor": factor}, build)
    return folder / "access.log"


@dataclass(frozen=True)
class RepeatedLog:
    """A log a real program wrote once (the seed), repeated whole up to a size: every copy
    parses, and frames into events, as the seed does."""

    path: Path
    events: int
    """The records the program wrote, times the copies."""
    lines: int


def repeated_log(
    name: str, spec: dict[str, Any], size: int, write_seed: Callable[[Path], int]
) -> RepeatedLog:
    """``bench/data/<name>/app.log``: ``write_seed(path)`` has a program write its log to
    ``path`` and returns the records it wrote; the log is then repeated up to at least
    ``size`` bytes. ``spec`` names what the seed depends on (a change regenerates it)."""

    def build(folder: Path) -> None:
        seed = folder / "seed.log"
        events = write_seed(seed)
        data = seed.read_bytes()
        seed.unlink()
        copies = max(1, -(-size // len(data)))
        with open(folder / "app.log", "wb") as out:
            for _ in range(copies):
                out.write(data)
        counts = {"events": events * copies, "lines": data.count(b"\n") * copies}
        (folder / "counts.json").write_text(json.dumps(counts))

    folder = _dataset(name, {**spec, "size": size}, build)
    counts = json.loads((folder / "counts.json").read_text())
    return RepeatedLog(folder / "app.log", counts["events"], counts["lines"])


def size_of(path: Path) -> int:
    """Bytes of a file, or of every file in a folder."""
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.iterdir() if p.is_file() and p.suffix == ".log")


def log_files(path: Path) -> list[Path]:
    return [path] if path.is_file() else sorted(path.glob("*.log"))


def warm(path: Path) -> None:
    """Read the input once, so every contestant starts from the page cache (this machine
    evicts pages after a few idle seconds)."""
    for file in log_files(path):
        with open(file, "rb") as handle:
            while handle.read(8 * MiB):
                pass


# ---------------------------------------------------------------------------------- configs


def pipeline_config(
    work: Path, input_path: Path, *, source: dict[str, Any] | None = None, **collector: Any
) -> Path:
    """A pipeline config reading ``input_path`` (a file or a folder of ``*.log``) into
    ``work/data`` with an SQLite metastore; ``source``: more keys of the source;
    ``collector`` overrides tuning keys."""
    pattern = str(input_path) if input_path.is_file() else str(input_path / "*.log")
    keys = {"name": "access", "paths": [pattern], "format": "nginx_combined", **(source or {})}
    document = {
        "name": PIPELINE,
        "sources": [keys],
        "data_dir": str(work / "data"),
        "collector": {"host": HOST, **collector},
        "schedule": None,
    }
    path = work / "pipeline.yaml"
    path.write_text(yaml.safe_dump(document))
    return path


@dataclass(frozen=True)
class Collected:
    """One ``run_once`` of the collector: what it sealed and how long it took."""

    seconds: float
    bytes: int
    lines: int
    checkpoint_id: int
    checkpoint_dir: str
    """``<staging>/<pipeline>/<checkpoint:08d>``, what the landing job takes."""
    cpu_seconds: float = 0.0
    """User + system CPU time of the process during the run (all its threads): steadier than
    the wall time on a shared machine."""
    events: int = 0
    """The events the checkpoint holds (which land as its rows + rejects): its lines, less
    those that continue a multiline event, from the manifests recorded at the seal."""


def collect_once(config_path: Path, on_engine: Callable[[Engine], None] | None = None) -> Collected:
    """Collect every file of the pipeline to its end and seal one checkpoint, as
    ``sluice collect --once`` does (acker, handoff sink, SQLite metastore, fsync at the seal).
    The time covers ``Collector.run_once`` only: opening (and migrating) the metastore is left
    out. ``on_engine`` sees the metastore's engine before the run (to count transactions)."""
    from pipeline_core.collector import Collector, freeze_startup_objects
    from pipeline_core.config import load_pipeline_config
    from pipeline_core.metastore import Metastore

    config = load_pipeline_config(config_path)
    metastore = Metastore.open(config.metastore_url)
    try:
        if on_engine is not None:
            on_engine(metastore.engine)
        freeze_startup_objects()  # as ``sluice collect`` does once it is built
        cpu_before = cpu_seconds(os.getpid())
        started = time.perf_counter()
        result = Collector(config, metastore).run_once()
        seconds = time.perf_counter() - started
        cpu = cpu_seconds(os.getpid()) - cpu_before
        sealed = result.sealed[-1]
        events = sealed_events(metastore, sealed.checkpoint_id)
    finally:
        metastore.close()
    return Collected(
        seconds,
        result.bytes,
        result.lines,
        sealed.checkpoint_id,
        str(Path(sealed.staging_path).parent),
        cpu,
        events,
    )


def sealed_events(metastore: Metastore, checkpoint_id: int) -> int:
    """The events of a checkpoint's batches, as the metastore recorded them."""
    return sum(batch.event_count for batch in metastore.batches(checkpoint_id))


# ---------------------------------------------------------------------------------- measures


@dataclass
class Stat:
    """Several measurements of one thing, in ``unit``."""

    values: list[float]
    unit: str
    places: int | None = None
    """Decimal places shown (by default, from the median's magnitude)."""

    @property
    def median(self) -> float:
        return statistics.median(self.values)

    def text(self) -> str:
        low, high = min(self.values), max(self.values)
        places = self.places if self.places is not None else _places(self.median)
        middle = f"{self.median:.{places}f}"
        if len(self.values) == 1:
            return f"{middle} {self.unit}"
        return f"{middle} [{low:.{places}f}-{high:.{places}f}] {self.unit}"


def _places(value: float) -> int:
    magnitude = abs(value)
    return 0 if magnitude >= 100 else 1 if magnitude >= 10 else 2 if magnitude >= 0.1 else 3


def paired_ratio(ours: Sequence[float], theirs: Sequence[float]) -> Stat:
    """Run-by-run ratios ``ours[i] / theirs[i]`` (both measured in run ``i``)."""
    return Stat([a / b for a, b in zip(ours, theirs, strict=True) if b], "x")


@dataclass
class Row:
    """One line of the table: a figure of Sluice, the baseline measured beside it, the ratio
    the target is stated in, and whether the target is met."""

    case: str
    measure: str
    sluice: Stat
    baseline: Stat | None = None
    baseline_name: str = ""
    ratio: Stat | None = None
    target: str = ""
    met: bool | None = None
    note: str = ""
    details: dict[str, Any] = field(default_factory=dict)


def timed(action: Callable[[], object]) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def run_child(module: str, *args: str, timeout: float = 3600) -> dict[str, Any]:
    """Run ``python -m module args`` from the repository root; its last line of standard
    output is JSON, returned."""
    completed = subprocess.run(
        [PYTHON, "-m", module, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=child_env(),
    )
    if completed.returncode != 0:
        command = " ".join([module, *args])
        raise RuntimeError(
            f"{command} failed ({completed.returncode}):\n{completed.stderr[-3000:]}"
        )
    result: dict[str, Any] = json.loads(completed.stdout.strip().splitlines()[-1])
    return result


def child_env() -> dict[str, str]:
    """The environment of the suite's child processes: the repository importable, and
    bytecode cached (compiling every module again would dominate each child's start-up)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def start_collector(config_path: Path) -> subprocess.Popen[bytes]:
    """``sluice collect CONFIG`` (continuous mode) in a child process; its standard error is
    piped, for the caller to show if it fails."""
    return subprocess.Popen(
        [PYTHON, "-m", "pipeline_core", "collect", str(config_path)],
        cwd=ROOT,
        env=child_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def stop_collector(
    collector: subprocess.Popen[bytes], *helpers: subprocess.Popen[Any] | None
) -> bytes:
    """Kill the helper processes still running (writers, ``tail -F``), stop ``collector`` as
    a service manager does (SIGTERM) and return its standard error."""
    for process in helpers:
        if process is not None and process.poll() is None:
            process.kill()
            process.wait()
    collector.send_signal(signal.SIGTERM)
    return collector.communicate(timeout=120)[1]


def check_collector(collector: subprocess.Popen[bytes], errors: bytes) -> None:
    """Raise if the stopped collector failed, with the end of what it said."""
    if collector.returncode != 0:
        text = errors.decode(errors="replace")
        raise RuntimeError(f"sluice collect exited {collector.returncode}: {text[-2000:]}")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a live process (``/proc/<pid>/stat`` utime + stime)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def status_kib(pid: int | str, key: str) -> int:
    """A ``kB`` field of ``/proc/<pid>/status`` (``VmHWM``: peak resident memory of that
    process alone, unlike ``ru_maxrss`` which a child inherits through fork and exec)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    raise KeyError(key)


def wait_for(condition: Callable[[], bool], timeout: float, what: str) -> None:
    """:func:`pipeline_core.testing.wait_until`, polling at a pace that costs a measured
    collector nothing."""
    wait_until(condition, timeout, what, poll=0.05)


# ---------------------------------------------------------------------------------- output


def code_version() -> dict[str, Any]:
    """The commit measured, and the files of the collector and the Spark job that differ
    from it (the figures are of the working tree)."""

    def git(*args: str) -> str:
        try:
            return subprocess.run(
                ["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=30
            ).stdout
        except OSError:
            return ""

    changed = git("status", "--porcelain", "--", "pipeline_core", "spark_jobs")
    return {
        "commit": git("rev-parse", "--short", "HEAD").strip(),
        "uncommitted": [line[3:] for line in changed.splitlines() if line.strip()],
    }


def machine() -> dict[str, Any]:
    """What the figures depend on, recorded beside them."""
    return {
        "cpus": os.cpu_count(),
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "python": platform.python_version(),
        "platform": platform.platform(),
    }


def format_table(rows: Sequence[Row]) -> str:
    header = ("#", "measure", "sluice median [min-max]", "baseline (same run)", "ratio", "target")
    lines = [header]
    for row in rows:
        baseline = f"{row.baseline_name} {row.baseline.text()}" if row.baseline else ""
        ratio = f"{row.ratio.median:.2f}x" if row.ratio else ""
        verdict = {True: "met", False: "NOT met", None: ""}[row.met]
        target = f"{row.target} {verdict}".strip()
        lines.append((row.case, row.measure, row.sluice.text(), baseline, ratio, target))
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    out = []
    for index, line in enumerate(lines):
        out.append("  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)))
        if index == 0:
            out.append("  ".join("-" * width for width in widths))
    notes = [f"  {row.case} {row.measure}: {row.note}" for row in rows if row.note]
    if notes:
        out += ["", "notes:", *notes]
    return "\n".join(line.rstrip() for line in out)


def write_results(rows: Sequence[Row], meta: dict[str, Any]) -> Path:
    """``bench/results/suite-<UTC time>.json`` and ``bench/results/suite-latest.json``."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    document = {"meta": meta, "rows": [_row_json(row) for row in rows]}
    text = json.dumps(document, indent=1, default=str)
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    path = RESULTS / f"suite-{stamp}.json"
    path.write_text(text)
    (RESULTS / "suite-latest.json").write_text(text)
    return path


def _row_json(row: Row) -> dict[str, Any]:
    document = asdict(row)
    for name in ("sluice", "baseline", "ratio"):
        stat = getattr(row, name)
        if stat is not None:
            document[name]["median"] = stat.median
            document[name]["min"] = min(stat.values)
            document[name]["max"] = max(stat.values)
    return document


# ---------------------------------------------------------------------------------- spark

SPARK_CONNECT_SCRIPT = ROOT / "scripts" / "spark-connect.sh"


@contextmanager
def connect_server(folder: Path) -> Iterator[str]:
    """A Spark Connect server of its own (a free port, run folder ``folder``), stopped at the
    end; yields its URL."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {
        **child_env(),
        "SLUICE_SPARK_CONNECT_DIR": str(folder),
        "SLUICE_SPARK_CONNECT_PORT": str(port),
        "SLUICE_PYTHON": PYTHON,
    }
    started = subprocess.run(
        ["bash", str(SPARK_CONNECT_SCRIPT), "start"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    try:
        if started.returncode != 0:
            raise RuntimeError(f"the Spark Connect server did not start:\n{started.stderr}")
        os.environ.setdefault("PYSPARK_PYTHON", PYTHON)
        yield started.stdout.strip()
    finally:
        subprocess.run(
            ["bash", str(SPARK_CONNECT_SCRIPT), "stop"], env=env, capture_output=True, timeout=120
        )
