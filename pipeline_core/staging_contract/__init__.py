"""The staging contract: where sealed batches live, and the manifest that indexes them.

One package owns the format that crosses from the collector to the landing job: the handoff
sink writes it (``pipeline_core.sinks``), the landing job reads and verifies it
(``spark_jobs``), and the test helpers build and read batches with it
(``pipeline_core.testing``, ``tests/support/staging.py``). docs/architecture.md, "Staging
(handoff) layout", explains it::

    <staging>/<pipeline>/_inflight/<host>/            parts being written (not yet sealed)
    <staging>/<pipeline>/<checkpoint:08d>/<host>/     one sealed batch (immutable)
        part-<source>-<seq:05d>.lines                 raw line bytes, indexed by segments
        _manifest.json                                a Manifest, written last

A manifest is written as ``format_version`` 4, 5 when a segment lists multiline ``events``, or
6 when an event is several runs of lines (``joins``: a container's stream, the other stream's
lines between them) (``Manifest.to_json``, ``write_manifest``), and read as 6, 5, 4 or 3
(whose segments have no
``kind`` and are all ``lines``: ``Manifest.from_json``, ``read_manifest``). Reading checks
every field it reads and raises a ``ManifestError`` naming the part, the segment and the
field. The values are frozen dataclasses; ``to_json`` gives
JSON-ready objects, ``from_json`` takes what ``json.loads`` gives.

:class:`StagingArea` is the one owner of where a pipeline's sealed checkpoints are, in a local
folder or an object store: the landing plan, the landing job's arguments and retention ask it.

The package imports only the standard library, pyarrow, NumPy, msgspec,
``pipeline_core.errors``, ``pipeline_core.formats`` and ``pipeline_core.storage`` (those only
too): the landing job imports it on the Spark driver, and the archive that ships ``spark_jobs``
to a cluster holds them all (``pipeline_core.landing``), as sources: ``_int_lists``, compiled
where the package is installed, has a fallback.
"""

from pipeline_core.staging_contract._area import StagingArea
from pipeline_core.staging_contract._events import (
    CUT_CODES,
    NO_EVENTS,
    EventCut,
    EventRuns,
    EventSpan,
    events_in,
)
from pipeline_core.staging_contract._fields import ManifestError
from pipeline_core.staging_contract._layout import (
    INFLIGHT_DIR,
    LAKE_SQL_CONF,
    MANIFEST_NAME,
    PART_SUFFIX,
    batch_dir,
    batch_key,
    checkpoint_dir,
    checkpoint_id_of,
    inflight_dir,
    part_name,
)
from pipeline_core.staging_contract._manifest import (
    EVENTS_FORMAT_VERSION,
    JOINED_EVENTS_FORMAT_VERSION,
    MANIFEST_FORMAT_VERSION,
    READABLE_FORMAT_VERSIONS,
    Manifest,
    ManifestPart,
    ManifestRange,
    SourceSpec,
    read_manifest,
    write_manifest,
)
from pipeline_core.staging_contract._segment import Segment, SegmentKind

__all__ = [
    "CUT_CODES",
    "EVENTS_FORMAT_VERSION",
    "INFLIGHT_DIR",
    "JOINED_EVENTS_FORMAT_VERSION",
    "LAKE_SQL_CONF",
    "MANIFEST_FORMAT_VERSION",
    "MANIFEST_NAME",
    "NO_EVENTS",
    "PART_SUFFIX",
    "READABLE_FORMAT_VERSIONS",
    "EventCut",
    "EventRuns",
    "EventSpan",
    "Manifest",
    "ManifestError",
    "ManifestPart",
    "ManifestRange",
    "Segment",
    "SegmentKind",
    "SourceSpec",
    "StagingArea",
    "batch_dir",
    "batch_key",
    "checkpoint_dir",
    "checkpoint_id_of",
    "events_in",
    "inflight_dir",
    "part_name",
    "read_manifest",
    "write_manifest",
]
