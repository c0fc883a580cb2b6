"""``sluice collect CONFIG|FOLDER [--once]``: tail the files, or read them once, into sealed
checkpoints. A stop signal (SIGTERM, Ctrl-C) seals what was read, whenever it comes."""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

from pipeline_core._stop_request import StopRequest
from pipeline_core.cli._exit_codes import ExitCode

if TYPE_CHECKING:
    from pipeline_core.collector import CollectorResult, CollectorService


def add_to(commands: Any, common: argparse.ArgumentParser) -> None:
    text = "collect the pipeline's files into sealed batches"
    parser = commands.add_parser("collect", parents=[common], help=text, description=text)
    parser.add_argument(
        "config", type=Path, help="pipeline config file (YAML), or a folder of them"
    )
    parser.add_argument(
        "--once",
        action="store_true",
        help="read every file to its current end, seal a checkpoint and exit (Ctrl-C seals "
        "what was read so far and exits 130)",
    )
    metrics = parser.add_mutually_exclusive_group()
    metrics.add_argument(
        "--metrics-address",
        metavar="HOST:PORT",
        type=_listen_address,
        help="serve /metrics (Prometheus), /health and /ready on HOST:PORT while collecting "
        "(127.0.0.1:9464, [::1]:9464; :9464 is loopback, 0.0.0.0:9464 every interface)",
    )
    metrics.add_argument("--metrics-port", type=int, metavar="N", help="the same on 127.0.0.1:N")
    parser.add_argument(
        "--metrics-file-labels",
        action="store_true",
        help="add a series per file, labelled with its path, to /metrics and metrics.prom "
        "(default: each source's files summed; a path is whatever named the file, and every "
        "file is one more series)",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    # First, before the slow imports, the configs and the metastore: a stop signal during the
    # start-up stops the collector once it is built instead of killing the process.
    stop = StopRequest.install(ignore=[] if args.once else [signal.SIGHUP])
    try:
        if args.once:
            return _collect_once(args, stop)
        return _collect_until_stopped(args, stop)
    finally:
        stop.uninstall()


def _collect_once(args: argparse.Namespace, stop: StopRequest) -> int:
    from pipeline_core.cli._output import checkpoint_line, open_operations, progress

    if not args.config.is_dir():
        operations = open_operations(args.config, migrate=True)
        _warn_about_sources_without_files([operations.config])
        with operations:  # the metastore opened (and migrated) first: its failure comes first
            if stop.requested:
                return _stopped_before_collecting(once=True)
            name = operations.config.name
            progress(f"collecting pipeline {name} once (Ctrl-C seals what was read)")
            _freeze_startup_objects()
            report = operations.collect_once(stop)
        print(
            f"collected {report.lines} lines ({report.bytes} bytes) from {report.files} files "
            f"in {report.seconds:.1f} s"
        )
        for info in report.sealed:
            print(checkpoint_line(info))
        return _interrupted(stop, [info.checkpoint_id for info in report.sealed])

    _warn_about_sources_without_files(_configs_of_folder(args.config))
    service = _service(args)
    if stop.requested:
        service.close()
        return _stopped_before_collecting(once=True)
    stop.when_requested(service.stop)
    _freeze_startup_objects()
    result = service.run_once()
    _print_result(result)
    return _interrupted(stop, [sealed.checkpoint_id for sealed in result.sealed])


def _freeze_startup_objects() -> None:
    """This process is the collector's for as long as it runs (``--once`` too: a backlog of a
    GiB made four full collections, each walking every start-up object again, 0.2 s of the
    reading thread's time): what start-up made is moved out of the cyclic collector's reach."""
    from pipeline_core.collector import freeze_startup_objects

    freeze_startup_objects()


def _interrupted(stop: StopRequest, sealed: list[int]) -> int:
    """0, or, after a stop signal, 130 and one line saying what was kept."""
    if not stop.requested:
        return ExitCode.OK
    kept = f"sealed checkpoint {', '.join(map(str, sealed))}" if sealed else "nothing sealed"
    print(
        f"sluice: interrupted: {kept} with what was read; the next run reads the rest",
        file=sys.stderr,
    )
    return ExitCode.INTERRUPTED


def _collect_until_stopped(args: argparse.Namespace, stop: StopRequest) -> int:
    """Tail until a stop signal; one that came before the service was built ends it unread."""
    if stop.requested:
        return _stopped_before_collecting()
    if args.config.is_dir():
        _warn_about_sources_without_files(_configs_of_folder(args.config))
    service = _service(args)
    if stop.requested:
        service.close()
        return _stopped_before_collecting()

    def reload(_signum: int, _frame: FrameType | None) -> None:
        service.reload()

    signal.signal(signal.SIGHUP, reload)
    stop.when_requested(service.stop)
    # Frozen before it says it is collecting, so that its metrics and probes are served as
    # soon as it does.
    _freeze_startup_objects()
    names = service.collector.pipelines
    what = f"pipeline{'s' if len(names) > 1 else ''} {', '.join(names)}"
    print(
        f"collecting {what}; SIGHUP reloads the configs, SIGTERM or Ctrl-C seals and stops",
        flush=True,
    )
    _print_result(service.run())
    return ExitCode.OK


def _service(args: argparse.Namespace) -> CollectorService:
    """The collector of the configs ``sluice collect`` was given, serving metrics as asked."""
    from pipeline_core.collector import CollectorService

    return CollectorService(
        args.config,
        metrics_address=args.metrics_address,
        metrics_port=args.metrics_port,
        metrics_file_labels=args.metrics_file_labels,
    )


def _stopped_before_collecting(*, once: bool = False) -> int:
    print("stopped before collecting: nothing read, nothing sealed", flush=True)
    return ExitCode.INTERRUPTED if once else ExitCode.OK


def _print_result(result: CollectorResult) -> None:
    print(f"stopped after {result.lines} lines ({result.bytes} bytes) in {result.seconds:.1f} s")
    for sealed in result.sealed:
        print(f"sealed checkpoint {sealed.checkpoint_id}: {sealed.lines} lines")


def _configs_of_folder(folder: Path) -> list[Any]:
    """The valid configs of a folder (an invalid one is reported when the collector reads it)."""
    from pipeline_core.config import load_pipeline_config
    from pipeline_core.errors import ConfigError

    configs = []
    for path in sorted(p for p in folder.glob("*.yaml") if p.is_file()):
        try:
            configs.append(load_pipeline_config(path))
        except ConfigError:
            continue
    return configs


def _warn_about_sources_without_files(configs: list[Any]) -> None:
    """One warning per source (not ``optional``) whose globs match no file now."""
    from pipeline_core.cli._output import warn
    from pipeline_core.source import find_files

    for config in configs:
        for source in config.sources:
            if not source.optional and not find_files(source):
                warn(
                    f"pipeline {config.name}, source {source.name}: no file matches "
                    f"{', '.join(source.paths)} (`optional: true` on the source silences this)"
                )


def _listen_address(text: str) -> str:
    from pipeline_core.collector import ListenAddress
    from pipeline_core.errors import ListenAddressError

    try:
        ListenAddress.parse(text)
    except ListenAddressError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text
