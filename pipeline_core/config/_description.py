"""What a resolved config says, as lines for people (``sluice validate``), secrets hidden."""

from __future__ import annotations

from pipeline_core.config._pipeline import PipelineConfig
from pipeline_core.config._sinks import FileSinkConfig, HttpSinkConfig, SqlSinkConfig


def describe_pipeline_config(config: PipelineConfig) -> list[str]:
    """The lines ``sluice validate`` prints for a valid config: its sources and their paths,
    where it stages, lands and keeps its state, its schedule, its sink groups and where each
    sink sends. Every line goes through :meth:`PipelineConfig.masked`: the values of secret
    variables and URL passwords show as ``***``."""
    lines = [f"pipeline {config.name}: valid"]
    for source in config.sources:
        lines.append(f"  source {source.name} ({source.format.value}): {', '.join(source.paths)}")
    lines += [
        f"  staging  {config.staging_location}",
        f"  lake     {config.lake_location}",
        f"  metastore {config.metastore_url}",
        f"  schedule {config.schedule}",
    ]
    for group in config.sink_groups_in_force:
        members = ", ".join(f"{name} ({config.sinks[name].type})" for name in group.sinks)
        lines.append(f"  sink group {group.name} ({group.processor.value}): {members}")
    for name, sink in config.sinks.items():
        target = _target(sink)
        if target is not None:
            lines.append(f"  sink {name} ({sink.type}): {target}")
    return [config.masked(line) for line in lines]


def _target(sink: object) -> str | None:
    """Where a sink sends its lines; for an HTTP sink also the names of the headers it adds
    (never their values: they are often credentials, written in the file or not)."""
    if isinstance(sink, HttpSinkConfig):
        headers = f" (headers {', '.join(sink.headers)})" if sink.headers else ""
        return f"{sink.url}{headers}"
    if isinstance(sink, SqlSinkConfig):
        return f"{sink.url} table {sink.table}"
    if isinstance(sink, FileSinkConfig):
        return str(sink.path)
    return None
