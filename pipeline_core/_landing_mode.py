"""How a landing's rows go into the lake tables: :class:`LandingMode`.

Its own module, with nothing but the standard library imported, so that choosing a mode (the
Airflow tasks, ``sluice land``, the spark-submit spec) does not load the lake's Iceberg and
Arrow libraries into processes that only collect. ``pipeline_core.lake`` exports it.
"""

from __future__ import annotations

from pipeline_core._compat import StrEnum


class LandingMode(StrEnum):
    """How a landing's rows go into a table that may hold its checkpoints already."""

    APPEND = "append"
    """First landing: checkpoints the table holds are committed already and left out."""
    REPLACE = "replace"
    """Reprocess or backfill: the checkpoints' rows are replaced in one commit."""
