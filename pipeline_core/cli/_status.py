"""``sluice status CONFIG``: files and offsets, checkpoints, the lease, live metrics. Read-only:
the metastore must exist and be migrated (``sluice db upgrade``)."""

from __future__ import annotations

import argparse
from typing import Any

from pipeline_core.cli._exit_codes import ExitCode
from pipeline_core.cli._options import json_config_command
from pipeline_core.cli._output import checkpoint_json, checkpoint_line, print_json


def add_to(commands: Any, common: argparse.ArgumentParser) -> None:
    text = "files and offsets, checkpoints and batches, the collector lease, live metrics"
    json_config_command(commands, common, "status", text, run)


def run(args: argparse.Namespace) -> int:
    from pipeline_core.cli._output import read_only_view
    from pipeline_core.collector import read_metrics
    from pipeline_core.state import pipeline_status

    with read_only_view(args.config) as (config, view):
        status = pipeline_status(config, view)
    live = read_metrics(config.data_dir, status.pipeline)
    files = [
        {
            "fingerprint": snapshot.fingerprint,
            "state": snapshot.state.value,
            "sealed_offset": snapshot.sealed_offset,
            "path": snapshot.path,  # any bytes, escaped to one printable line
            "unsealed_bytes": snapshot.unread_bytes,
            "note": snapshot.note,
        }
        for snapshot in status.files
    ]
    if args.json:
        print_json(
            {
                "pipeline": status.pipeline,
                "host": status.host,
                "lease_holder": status.lease_holder,
                "running_collector": live,
                "files": files,
                "checkpoints": [checkpoint_json(info) for info in status.checkpoints],
            }
        )
        return ExitCode.OK
    print(f"pipeline {status.pipeline} on {status.host}")
    print(f"  collector lease: {status.lease_holder or 'free'}")
    if live is not None:
        print_live_metrics(live)
    print(f"  files ({len(files)}):")
    for file in files:
        behind, note = file["unsealed_bytes"], file["note"]
        print(
            f"    {file['fingerprint'] or '-'} {file['state']:9} sealed to {file['sealed_offset']}"
            + ("" if behind is None else f", {behind} bytes unsealed")
            + ("" if note is None else f" ({note})")
            + f"  {file['path']}"
        )
    print(f"  checkpoints (newest {len(status.checkpoints)}):")
    for info in status.checkpoints:
        print(checkpoint_line(info, indent="    "))
    return ExitCode.OK


def print_live_metrics(live: dict[str, Any]) -> None:
    """What the running collector reported last (its metrics file)."""
    print(
        f"  running collector: {live['state']}, read {live['lines_read']} lines "
        + (
            f"in {live['events_read']} events "
            if live.get("events_read", live["lines_read"]) != live["lines_read"]
            else ""
        )
        + f"({live['bytes_read']} bytes), sent {live['bytes_sent']} bytes, "
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
        held = file.get("held_event_s")
        print(
            f"    {file['unread_bytes']:>12} bytes unread  {file['path']}"
            + ("" if held is None else f"  (an unfinished event held back {held:.1f} s)")
        )
