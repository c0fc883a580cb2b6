"""Storage locations: local folders and object stores (S3, GCS, Azure) behind Arrow filesystems.

A location is written as a URL (``s3://bucket/prefix``, ``gs://``, ``abfs://``, ``file://``)
or a plain path; :class:`StorageLocation` parses it, refuses credentials written into it, and
opens its ``pyarrow.fs`` filesystem, whose credentials come from the environment and the
store's standard chain. The collector uploads sealed batches through it
(``pipeline_core.sinks``), the lake writes and reads its files through
:func:`location_filesystem`, ``sluice validate`` probes a location with
:func:`probe_writable`, and the landing job's driver hands :func:`store_environment` to its
executors.

The package imports only ``pyarrow``, the standard library, ``pipeline_core.errors`` and
``pipeline_core._compat``: the landing job ships it to Spark's executors.
"""

from pipeline_core.storage._environment import STORE_ENVIRONMENT, store_environment
from pipeline_core.storage._location import (
    S3_ENDPOINT_ENV,
    StorageLocation,
    StorageScheme,
    location_filesystem,
)
from pipeline_core.storage._probe import PROBE_PREFIX, probe_writable

__all__ = [
    "PROBE_PREFIX",
    "S3_ENDPOINT_ENV",
    "STORE_ENVIRONMENT",
    "StorageLocation",
    "StorageScheme",
    "location_filesystem",
    "probe_writable",
    "store_environment",
]
