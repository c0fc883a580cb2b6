"""The ``sluice`` command (also ``python -m pipeline_core``).

Every subcommand prints what it did and exits non-zero with a one-line message on failure.
Importing this module is quick: what a command needs is imported when it runs, so that
``sluice collect`` takes stop signals before its slow start-up.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
from collections.abc import Callable, Sequence
from datetime import date
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

from pipeline_core._stop_request import StopRequest
from pipeline_core.errors import SluiceError

if TYPE_CHECKING:
    from pipeline_core.collector import CollectorResult
    from pipeline_core.operations import CheckpointInfo, PipelineOperations


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO if args.info else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    if not (args.verbose or args.info):
        for noisy in ("alembic", "py4j"):
            logging.getLogger(noisy).setLevel(logging.WARNING)
        # Airflow's own logging (read when it is imported, e.g. by `land`) relays spark-submit.
        os.environ.setdefault("AIRFLOW__LOGGING__LOGGING_LEVEL", "WARNING")
    command: Callable[[argparse.Namespace], int] = args.command
    try:
        return command(args)
    except SluiceError as exc:
        print(f"sluice: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sluice", description=__doc__)
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    parser.add_argument("--info", action="store_true", help="progress logging")
    commands = parser.add_subparsers(required=True, metavar="COMMAND")

    def command(
        name: str, handler: Callable[[argparse.Namespace], int], text: str
    ) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, help=text, description=text)
        sub.set_defaults(command=handler)
        if name == "collect":
            sub.add_argument(
                "config", type=Path, help="pipeline config file (YAML), or a folder of them"
            )
        elif name != "sample-logs":
            sub.add_argument("config", type=Path, help="pipeline config file (YAML)")
        return sub

    command("validate", _validate, "check a pipeline config and print what it resolves to")
    collect = command("collect", _collect, "collect the pipeline's files into sealed batches")
    collect.add_argument(
        "--once",
        action="store_true",
        help="read every file to its current end, seal a checkpoint and exit",
    )
    collect.add_argument(
        "--metrics-port",
        type=int,
        help="serve Prometheus metrics on 127.0.0.1:PORT/metrics while collecting",
    )
    land = command("land", _land, "land sealed checkpoints into the lake with Spark and commit")
    land.add_argument(
        "--checkpoint",
        type=int,
        action="append",
        help="land this checkpoint (repeatable; default: every sealed one not committed yet)",
    )
    land.add_argument(
        "--replace",
        action="store_true",
        help="replace what the lake holds of the checkpoints (reprocess) instead of leaving "
        "out what it holds already",
    )
    compact = command(
        "compact",
        _compact,
        "compact the lake tables' small files, expire old snapshots, remove orphan files and "
        "the staging of committed checkpoints past handoff.retain_hours",
    )
    compact.add_argument(
        "--day",
        type=_day,
        help="compact this day partition (YYYY-MM-DD; default: every day before today with "
        "more than one file)",
    )
    command("status", _status, "files and offsets, checkpoints and batches")
    command("report", _report, "what the lake holds: rows, rows per HTTP status, rejects")
    sample = command("sample-logs", _sample_logs, "append sample nginx access logs to a folder")
    sample.add_argument("folder", type=Path)
    sample.add_argument("--lines", type=int, default=20_000)
    sample.add_argument("--malformed", type=int, default=25, help="malformed lines to plant")
    sample.add_argument("--seed", type=int, default=None)
    return parser


def _validate(args: argparse.Namespace) -> int:
    config = _operations(args.config).config
    print(f"pipeline {config.name}: valid")
    for source in config.sources:
        print(f"  source {source.name} ({source.format.value}): {', '.join(source.paths)}")
    print(f"  staging  {config.staging_dir}")
    print(f"  lake     {config.lake_dir}")
    print(f"  metastore {_hide_password(config.metastore_url)}")
    print(f"  schedule {config.schedule}")
    for group in config.sink_groups_in_force:
        members = ", ".join(f"{name} ({config.sinks[name].type})" for name in group.sinks)
        print(f"  sink group {group.name} ({group.processor.value}): {members}")
    return 0


def _collect(args: argparse.Namespace) -> int:
    if args.once:
        return _collect_once(args)
    # First, before the slow imports, the configs and the metastore: a stop signal during the
    # start-up stops the service once it is built instead of killing the process.
    stop = StopRequest.install(ignore=[signal.SIGHUP])
    try:
        return _collect_until_stopped(args, stop)
    finally:
        stop.uninstall()


def _collect_once(args: argparse.Namespace) -> int:
    from pipeline_core.collector import CollectorService

    if args.config.is_file():
        report = _operations(args.config).collect_once()
        print(
            f"collected {report.lines} lines ({report.bytes} bytes) from {report.files} files "
            f"in {report.seconds:.1f} s"
        )
        for info in report.sealed:
            _print_checkpoint(info)
        return 0
    _print_result(CollectorService(args.config, metrics_port=args.metrics_port).run_once())
    return 0


def _collect_until_stopped(args: argparse.Namespace, stop: StopRequest) -> int:
    """Tail until a stop signal; one that came before the service was built ends it unread."""
    from pipeline_core.collector import CollectorService

    if stop.requested:
        return _stopped_before_collecting()
    service = CollectorService(args.config, metrics_port=args.metrics_port)
    if stop.requested:
        service.close()
        return _stopped_before_collecting()

    def reload(_signum: int, _frame: FrameType | None) -> None:
        service.reload()

    signal.signal(signal.SIGHUP, reload)
    stop.when_requested(service.stop)
    names = service.collector.pipelines
    what = f"pipeline{'s' if len(names) > 1 else ''} {', '.join(names)}"
    print(
        f"collecting {what}; SIGHUP reloads the configs, SIGTERM or Ctrl-C seals and stops",
        flush=True,
    )
    _print_result(service.run())
    return 0


def _stopped_before_collecting() -> int:
    print("stopped before collecting: nothing read, nothing sealed", flush=True)
    return 0


def _print_result(result: CollectorResult) -> None:
    print(f"stopped after {result.lines} lines ({result.bytes} bytes) in {result.seconds:.1f} s")
    for sealed in result.sealed:
        print(f"sealed checkpoint {sealed.checkpoint_id}: {sealed.lines} lines")


def _land(args: argparse.Namespace) -> int:
    from pipeline_core.lake import LandingMode

    operations = _operations(args.config)
    if args.checkpoint:
        ids = list(args.checkpoint)
    else:
        ids = [info.checkpoint_id for info in operations.pending_landings()]
    if not ids:
        print("nothing to land: every sealed checkpoint is committed")
        return 0
    mode = LandingMode.REPLACE if args.replace else LandingMode.APPEND
    print(f"landing checkpoints {', '.join(map(str, ids))} in one Spark job ({mode.value})")
    for info in operations.land(ids, mode=mode):
        _print_checkpoint(info)
    return 0


def _compact(args: argparse.Namespace) -> int:
    report = _operations(args.config).maintain(args.day)
    for compaction in report.compactions:
        if compaction.committed:
            print(
                f"compacted {compaction.table} {compaction.day}: {compaction.files_before} "
                f"files -> {compaction.files_after} ({compaction.rows} rows)"
            )
        else:
            print(
                f"left {compaction.table} {compaction.day} as it is "
                f"({compaction.files_before} files)"
            )
    print(
        f"expired {report.expired_snapshots} snapshots, removed {report.orphan_files} orphan files"
    )
    return 0


def _day(value: str) -> date:
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a day (YYYY-MM-DD): {value!r}") from None


def _status(args: argparse.Namespace) -> int:
    from pipeline_core.collector import read_metrics

    operations = _operations(args.config)
    status = operations.status()
    print(f"pipeline {status.pipeline} on {status.host}")
    print(f"  collector lease: {status.lease_holder or 'free'}")
    live = read_metrics(operations.config.data_dir, status.pipeline)
    if live is not None:
        _print_live_metrics(live)
    print(f"  files ({len(status.files)}):")
    for record in status.files:
        size = _size(record.path)
        behind = "" if size is None else f", {max(0, size - record.sealed_offset)} bytes unsealed"
        print(
            f"    {record.fingerprint} {record.state.value:8} sealed to {record.sealed_offset}"
            f"{behind}  {record.path}"
        )
    print(f"  checkpoints (newest {len(status.checkpoints)}):")
    for info in status.checkpoints:
        _print_checkpoint(info, indent="    ")
    return 0


def _print_live_metrics(live: dict[str, Any]) -> None:
    """What the running collector reported last (its metrics file)."""
    print(
        f"  running collector: {live['state']}, read {live['lines_read']} lines "
        f"({live['bytes_read']} bytes), sent {live['bytes_sent']} bytes, "
        f"{live['unread_bytes']} bytes unread, blocked {live['blocked_seconds']:.1f} s, "
        f"{live['trees_in_flight']} chunks in flight"
    )
    for name, queue in live["queues"].items():
        print(
            f"    {name} queue: {queue['size']} / high {queue['high']} (low {queue['low']})"
            + ("" if queue["writable"] else ", full")
        )
    for group in live["sink_groups"]:
        print(
            f"    sink group {group['name']}: {group['deliveries']} deliveries, "
            f"{group['delivery_errors'] + group['errors']} failures, {group['backoffs']} backoffs"
        )
    for file in live["files"]:
        print(f"    {file['unread_bytes']:>12} bytes unread  {file['path']}")


def _report(args: argparse.Namespace) -> int:
    from pipeline_core.lake import summarize_lake

    operations = _operations(args.config)
    # The status opens (and migrates) the metastore, whose database holds the lake's catalog.
    committed = [c for c in operations.status(limit=5).checkpoints if c.committed_at]
    summary = summarize_lake(operations.config)
    for line in summary.lines():
        print(line)
    for info in committed[-3:]:
        _print_checkpoint(info)
    return 0


def _sample_logs(args: argparse.Namespace) -> int:
    from pipeline_core.testing import append_sample_access_logs

    written = append_sample_access_logs(
        args.folder, lines=args.lines, malformed=args.malformed, seed=args.seed
    )
    print(
        f"wrote {written.lines} lines ({written.malformed} malformed) to {args.folder}"
        + (f", rotated {written.rotated}" if written.rotated else "")
    )
    return 0


def _operations(config: Path) -> PipelineOperations:
    from pipeline_core.operations import PipelineOperations

    return PipelineOperations(config)


def _print_checkpoint(info: CheckpointInfo, indent: str = "") -> None:
    landing = ""
    if info.landing:
        landed = info.landed
        landing = f", landed {landed.rows or 0} rows + {landed.rejects or 0} rejects"
    batches = ",".join(str(b) for b in info.batch_ids) or "-"
    print(
        f"{indent}checkpoint {info.checkpoint_id} {info.state.value}: {info.line_count} lines, "
        f"{info.byte_count} bytes, batch {batches}{landing}"
        + (f" (run {info.run_id})" if info.run_id else "")
    )


def _size(path: str) -> int | None:
    try:
        return Path(path).stat().st_size
    except OSError:
        return None


def _hide_password(url: str) -> str:
    import sqlalchemy

    try:
        return sqlalchemy.make_url(url).render_as_string(hide_password=True)
    except Exception:
        return url


if __name__ == "__main__":
    sys.exit(main())
