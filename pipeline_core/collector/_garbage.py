"""The cyclic garbage collector in a long-running collector.

CPython's collector walks every object it tracks at each full collection. A collector
process holds a hundred thousand objects before it reads a byte (its modules, its configs'
models, the metastore's mapped tables, Airflow-free but pydantic- and SQLAlchemy-heavy), and a
full collection of them stopped every thread for 35-110 ms every 5-10 s on a host of ten
thousand files (case 16), in the middle of a checkpoint's seal as often as not. They live as
long as the process: ``sluice collect`` calls :func:`freeze_startup_objects` once its
service is built, which moves them out of the collector's reach (``gc.freeze``), so a full
collection walks only what was made since.
Objects frozen are still freed when their last reference goes; only cycles among them are
not collected, and the objects of a start-up are not cycles made to be thrown away.
"""

from __future__ import annotations

import gc


def freeze_startup_objects() -> None:
    """Collect what start-up left as garbage, then freeze every object left (process-wide:
    for a process's entry point, not a library)."""
    gc.collect()
    gc.freeze()
