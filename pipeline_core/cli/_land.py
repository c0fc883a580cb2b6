"""``sluice land CONFIG``: land sealed checkpoints with one Spark job, then commit them.

Each phase is a progress line on stderr (what it lands, spark-submit starting, Spark finished,
committing); ``--dry-run`` prints the plan and changes nothing. Ctrl-C while Spark runs kills
spark-submit and says which checkpoints were not committed (the next ``sluice land`` lands
them; landing is idempotent, so nothing lands twice). ``--spark-connect sc://HOST:PORT`` (or
``$SLUICE_SPARK_CONNECT_URL``) lands on that warm Spark Connect server instead of a
spark-submit.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pipeline_core.cli._exit_codes import ExitCode
from pipeline_core.cli._options import add_json, config_command
from pipeline_core.cli._output import checkpoint_json, checkpoint_line, print_json, progress

if TYPE_CHECKING:
    from pipeline_core.operations import CheckpointInfo, PipelineOperations

HEARTBEAT_S = 15.0
"""While Spark runs, a progress line this often."""


def add_to(commands: Any, common: argparse.ArgumentParser) -> None:
    text = "land sealed checkpoints into the lake with Spark and commit"
    parser = config_command(commands, common, "land", text)
    parser.add_argument(
        "--checkpoint",
        type=int,
        action="append",
        help="land this checkpoint (repeatable; default: every sealed one not committed yet)",
    )
    parser.add_argument(
        "--replace",
        action="store_true",
        help="replace what the lake holds of the checkpoints (reprocess) instead of leaving "
        "out what it holds already",
    )
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="print what would be landed (checkpoints, bytes, the spark-submit command) and "
        "change nothing",
    )
    parser.add_argument(
        "--spark-connect",
        metavar="URL",
        default=None,
        help="land on this Spark Connect server (sc://host:port; scripts/spark-connect.sh "
        "starts one) instead of with spark-submit (default: $SLUICE_SPARK_CONNECT_URL; an "
        "empty URL: spark-submit)",
    )
    add_json(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from pipeline_core.cli._output import open_operations

    spark_connect = spark_connect_url(args.spark_connect)
    with open_operations(args.config, migrate=not args.dry_run) as operations:
        return _land(args, operations, spark_connect)


def _land(
    args: argparse.Namespace, operations: PipelineOperations, spark_connect: str | None
) -> int:
    from pipeline_core.lake import LandingMode

    mode = LandingMode.REPLACE if args.replace else LandingMode.APPEND
    if args.checkpoint:
        infos = [operations.checkpoint(checkpoint_id) for checkpoint_id in args.checkpoint]
    else:
        infos = operations.pending_landings()
    ids = list(dict.fromkeys(info.checkpoint_id for info in infos))
    if args.dry_run:
        return _print_plan(operations, infos, mode, args.json, spark_connect)
    if not ids:
        _say_nothing_to_land(args.json)
        return ExitCode.OK
    total = sum(info.byte_count for info in infos)
    progress(
        f"landing checkpoint{'s' if len(ids) > 1 else ''} {', '.join(map(str, ids))} "
        f"({sum(info.line_count for info in infos)} lines, {total} bytes) in one Spark job "
        f"({mode.value})" + ("" if spark_connect is None else f" on {_shown(spark_connect)}")
    )
    phases = _Phases(spark_connect)
    try:
        landed = operations.land(ids, mode=mode, progress=phases, spark_connect=spark_connect)
    except KeyboardInterrupt:
        phases.stop_heartbeat()
        _say_not_committed(operations, ids, phases.spark_started)
        return ExitCode.INTERRUPTED
    finally:
        phases.stop_heartbeat()
    progress(f"committed {len(landed)} checkpoint{'s' if len(landed) > 1 else ''}")
    if args.json:
        print_json({"dry_run": False, "landed": [checkpoint_json(info) for info in landed]})
    else:
        for info in landed:
            print(checkpoint_line(info))
    return ExitCode.OK


def spark_connect_url(given: str | None) -> str | None:
    """The Spark Connect server to land on: ``--spark-connect``, else
    ``$SLUICE_SPARK_CONNECT_URL``; None (spark-submit) when neither names one."""
    from pipeline_core.landing import SPARK_CONNECT_URL_ENV

    url = given if given is not None else os.environ.get(SPARK_CONNECT_URL_ENV)
    return url or None


def _shown(url: str) -> str:
    """``url`` without its parameters (a token)."""
    return url.split(";", 1)[0].rstrip("/")


class _Phases:
    """Prints the phases :meth:`PipelineOperations.land` reports, and a heartbeat while Spark
    runs."""

    def __init__(self, spark_connect: str | None = None) -> None:
        self.spark_started = False
        self._spark_connect = spark_connect
        self._spark_done = threading.Event()

    def submitting(self, command: str) -> None:
        self.spark_started = True
        if self._spark_connect is None:
            progress(f"spark-submit starting: {command.split(' ', 1)[0]}")
        else:
            progress(f"landing job starting on Spark Connect {_shown(self._spark_connect)}")
        threading.Thread(target=self._heartbeat, name="sluice-land-heartbeat", daemon=True).start()

    def spark_finished(self, seconds: float) -> None:
        self._spark_done.set()
        progress(f"Spark finished in {seconds:.0f} s")

    def committing(self, checkpoint_ids: Sequence[int]) -> None:
        progress(f"committing checkpoint{'s' if len(checkpoint_ids) > 1 else ''} "
                 f"{', '.join(map(str, checkpoint_ids))}")  # fmt: skip

    def stop_heartbeat(self) -> None:
        self._spark_done.set()

    def _heartbeat(self) -> None:
        waited = 0.0
        while not self._spark_done.wait(HEARTBEAT_S):
            waited += HEARTBEAT_S
            progress(f"Spark still running ({waited:.0f} s; -v shows its log)")


def _say_not_committed(operations: PipelineOperations, ids: list[int], spark: bool) -> None:
    from pipeline_core.metastore import CheckpointState

    try:
        states = {i: operations.checkpoint(i).state for i in ids}
        left = [i for i in ids if states[i] is not CheckpointState.COMMITTED]
    except Exception:  # the metastore is out of reach too: say what is sure
        left = ids
    what = "Spark stopped; " if spark else ""
    if left:
        listed = ", ".join(map(str, left))
        print(
            f"sluice: interrupted: {what}checkpoint{'s' if len(left) > 1 else ''} {listed} "
            "not committed (the next `sluice land` lands them again, without duplicates)",
            file=sys.stderr,
        )
    else:
        print(f"sluice: interrupted: {what}every checkpoint was committed", file=sys.stderr)


def _say_nothing_to_land(as_json: bool) -> None:
    if as_json:
        print_json({"dry_run": False, "landed": []})
    else:
        print("nothing to land: every sealed checkpoint is committed")


def _print_plan(
    operations: PipelineOperations,
    infos: list[CheckpointInfo],
    mode: Any,
    as_json: bool,
    spark_connect: str | None = None,
) -> int:
    """What a landing would do; nothing changed (no archive written, no checkpoint failed)."""
    ids = [info.checkpoint_id for info in infos]
    spec = operations.landing_job(ids, "sluice-land-dry-run", mode, dry_run=True) if ids else None
    command = operations.landing.command(spec, spark_connect) if spec is not None else None
    if as_json:
        print_json(
            {
                "dry_run": True,
                "mode": mode.value,
                "checkpoints": [checkpoint_json(info) for info in infos],
                "bytes": sum(info.byte_count for info in infos),
                "spark_submit": command if spark_connect is None else None,
                "spark_connect": None
                if spark_connect is None
                else {"url": _shown(spark_connect), "command": command},
            }
        )
        return ExitCode.OK
    if command is None:
        print("nothing to land: every sealed checkpoint is committed")
        return ExitCode.OK
    print(f"would land in one Spark job ({mode.value}), {sum(i.byte_count for i in infos)} bytes:")
    for info in infos:
        print(checkpoint_line(info, indent="  "))
    if spark_connect is None:
        print(f"spark-submit command:\n  {command}")
    else:
        print(f"on Spark Connect {_shown(spark_connect)}, the job's driver:\n  {command}")
    return ExitCode.OK
