"""``sluice validate CONFIG|FOLDER``: the preflight of one pipeline or of a folder of them."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipeline_core.cli._exit_codes import ExitCode
from pipeline_core.cli._options import add_json, config_command

if TYPE_CHECKING:
    from pipeline_core.cli._check import Check


def add_to(commands: Any, common: argparse.ArgumentParser) -> None:
    text = (
        "preflight a pipeline config, or every *.yaml of a folder: schema, schedule, the files "
        "each glob matches, folders writable, metastore reachable and migrated, lake catalog, "
        "sinks reachable; changes nothing"
    )
    parser = config_command(
        commands, common, "validate", text, config_help="pipeline config file (YAML), or a folder"
    )
    add_json(parser)
    parser.set_defaults(handler=run)


@dataclass
class Validation:
    """The checks of one config file."""

    config: Path
    pipeline: str | None = None
    checks: list[Check] = field(default_factory=list)

    @property
    def exit_code(self) -> ExitCode:
        from pipeline_core.cli._check import CheckStatus

        statuses = {check.status for check in self.checks}
        for status, code in (
            (CheckStatus.INVALID, ExitCode.INVALID),
            (CheckStatus.UNREACHABLE, ExitCode.UNREACHABLE),
            (CheckStatus.NOT_MIGRATED, ExitCode.NOT_MIGRATED),
        ):
            if status in statuses:
                return code
        return ExitCode.OK

    def to_json(self) -> dict[str, Any]:
        return {
            "config": str(self.config),
            "pipeline": self.pipeline,
            "valid": self.exit_code is ExitCode.OK,
            "exit_code": int(self.exit_code),
            "checks": [
                {
                    "check": check.name,
                    "status": check.status.value,
                    "message": check.message,
                    "details": list(check.details),
                }
                for check in self.checks
            ],
        }


def run(args: argparse.Namespace) -> int:
    path: Path = args.config
    files = sorted(p for p in path.glob("*.yaml") if p.is_file()) if path.is_dir() else [path]
    if not files:
        from pipeline_core.errors import ConfigError

        raise ConfigError(str(path), ["no pipeline config (*.yaml) in the folder"])
    validations = [validate(file) for file in files]
    worst = max((v.exit_code for v in validations), key=_severity)
    if args.json:
        from pipeline_core.cli._output import print_json

        print_json(
            {
                "valid": worst is ExitCode.OK,
                "exit_code": int(worst),
                "pipelines": [v.to_json() for v in validations],
            }
        )
    else:
        for validation in validations:
            _print(validation)
    return worst


def validate(file: Path) -> Validation:
    """Read ``file`` and, when it is valid, run every preflight check of it."""
    from pipeline_core.cli._check import Check, CheckStatus
    from pipeline_core.cli._preflight import preflight
    from pipeline_core.config import load_pipeline_config
    from pipeline_core.errors import ConfigError

    try:
        config = load_pipeline_config(file)
    except ConfigError as exc:
        problems = "; ".join(exc.problems)
        return Validation(file, None, [Check("config", CheckStatus.INVALID, problems)])
    validation = Validation(file.resolve(), config.name)
    validation.checks.append(Check("config", CheckStatus.OK, "valid"))
    validation.checks += preflight(config)
    masked = getattr(config, "masked", None)
    if masked is not None:  # hide secrets a message may hold (a sink URL's password)
        validation.checks = [
            Check(c.name, c.status, masked(c.message), c.details) for c in validation.checks
        ]
    return validation


def _severity(code: ExitCode) -> int:
    """Which exit status wins for a folder: invalid, then unreachable, then not migrated."""
    order = [ExitCode.OK, ExitCode.NOT_MIGRATED, ExitCode.UNREACHABLE, ExitCode.INVALID]
    return order.index(code)


def _print(validation: Validation) -> None:
    name = validation.pipeline or "?"
    print(f"pipeline {name}  ({validation.config})")
    for check in validation.checks:
        print(f"  {check.status.value:<12} {check.name}: {check.message}")
        for detail in check.details:
            print(f"  {'':<12}   {detail}")
    failed = [check for check in validation.checks if not check.ok]
    if not failed:
        print(f"pipeline {name}: valid")
    else:
        kind = {
            ExitCode.INVALID: "invalid",
            ExitCode.UNREACHABLE: "not ready: something it needs cannot be reached",
            ExitCode.NOT_MIGRATED: "not ready: run `sluice db upgrade` first",
        }[validation.exit_code]
        print(f"pipeline {name}: {kind} ({len(failed)} of {len(validation.checks)} checks failed)")
