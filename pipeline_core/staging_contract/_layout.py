"""Where sealed batches, their parts and manifests, and the landing job's outputs live."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from pipeline_core.staging_contract._fields import ManifestError

MANIFEST_NAME = "_manifest.json"
PART_SUFFIX = ".lines"
INFLIGHT_DIR = "_inflight"
LAKE_SQL_CONF: Mapping[str, str] = {
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
    # A writer held open per partition (up to 16 per task) instead of sorting every row by
    # its partition before writing: no sort, rows keep their staging order.
    "spark.sql.maxConcurrentOutputFileWriters": "16",
}
"""Spark settings the lake's content and writes depend on: the landing job sets them on its
session, and its spark-submit spec passes them too."""


def path_segment(value: str, what: str) -> str:
    """``value``, checked to be one segment of a path that stays in its folder: not empty, not
    ``.`` or ``..``, no ``/``, ``\\`` or NUL. The config's patterns already allow no other
    (``pipeline_core.config``); this refuses one that came another way.

    Raises:
        ValueError: naming ``what`` and ``value``.
    """
    if value in ("", ".", "..") or any(c in value for c in "/\\\0"):
        raise ValueError(
            f"{what} {value!r} cannot name a folder: it would leave the staging folder"
        )
    return value


def checkpoint_dir(staging_root: Path, pipeline: str, checkpoint_id: int) -> Path:
    """``<staging>/<pipeline>/<checkpoint:08d>``: a checkpoint's sealed batches, one per host.

    Raises:
        ValueError: ``pipeline`` is not one path segment (:func:`path_segment`); so for every
            path below.
    """
    return Path(staging_root, *checkpoint_key(pipeline, checkpoint_id).split("/"))


def checkpoint_key(pipeline: str, checkpoint_id: int) -> str:
    """``<pipeline>/<checkpoint:08d>``: a checkpoint's folder below a staging root, as a
    ``/``-separated key: the one place a checkpoint's folder is named (:func:`checkpoint_dir`,
    :func:`batch_key`, :class:`StagingArea`)."""
    return f"{path_segment(pipeline, 'pipeline')}/{checkpoint_id:08d}"


def checkpoint_id_of(folder: Path) -> int:
    """The checkpoint whose batches ``folder`` holds (named by ``checkpoint_dir``).

    Raises:
        ManifestError: the folder is not named so.
    """
    if not folder.name.isdigit():
        raise ManifestError(f"checkpoint directory is not named <checkpoint:08d>: {folder}")
    return int(folder.name)


def batch_dir(staging_root: Path, pipeline: str, checkpoint_id: int, host: str) -> Path:
    """``<staging>/<pipeline>/<checkpoint:08d>/<host>``: one host's sealed batch."""
    return checkpoint_dir(staging_root, pipeline, checkpoint_id) / path_segment(host, "host")


def batch_key(pipeline: str, checkpoint_id: int, host: str) -> str:
    """``<pipeline>/<checkpoint:08d>/<host>``: one host's sealed batch below a staging root,
    as a ``/``-separated key (an object store prefix's form of :func:`batch_dir`)."""
    return f"{checkpoint_key(pipeline, checkpoint_id)}/{path_segment(host, 'host')}"


def inflight_dir(staging_root: Path, pipeline: str, host: str) -> Path:
    """``<staging>/<pipeline>/_inflight/<host>``: a host's parts until they are sealed."""
    return (
        Path(staging_root)
        / path_segment(pipeline, "pipeline")
        / INFLIGHT_DIR
        / path_segment(host, "host")
    )


def part_name(source: str, seq: int) -> str:
    """``part-<source>-<seq:05d>.lines``: the ``seq``-th part of ``source`` in a batch."""
    return f"part-{path_segment(source, 'source')}-{seq:05d}{PART_SUFFIX}"
