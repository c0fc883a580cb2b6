"""What every config model shares: strictness, the name pattern and the host pattern.

Every value of a config that becomes a segment of a path Sluice writes (a folder of staging,
the spool, the lake) is one of these, so none can be ``.``, ``..``, hold a ``/`` or be empty:

* a name (``NAME_PATTERN``): the pipeline's, each source's, sink's and sink group's, the lake's
  ``namespace``;
* a host (``HOST_PATTERN``): ``collector.host`` and each of ``worker.hosts``.

The staging layout refuses such a segment again where it builds a path
(``pipeline_core.staging_contract``).
"""

from __future__ import annotations

import re
import socket

from pydantic import BaseModel, ConfigDict

NAME_PATTERN = r"^[a-z][a-z0-9_]{0,62}$"
MAX_HOST_CHARS = 200
HOST_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$"
"""A log host's name: a host name (letters, digits, ``.``, ``-``), ``_`` allowed, starting with
a letter or digit (so never ``.`` or ``..``), at most ``MAX_HOST_CHARS`` characters. It names
the host's task (``collect_<host>``), its staging folders and its rows."""
HOST_RULE = (
    "letters, digits, '.', '-' and '_', starting with a letter or digit, at most "
    f"{MAX_HOST_CHARS} characters"
)
"""``HOST_PATTERN`` in words, for error messages."""


def default_host() -> str:
    """This machine's name (``socket.gethostname()``) as a valid host (``HOST_PATTERN``): a
    character it does not allow becomes ``-``, a leading ``.``, ``-`` or ``_`` is dropped, and
    it is cut to ``MAX_HOST_CHARS``; ``localhost`` if nothing is left."""
    name = re.sub(r"[^A-Za-z0-9._-]", "-", socket.gethostname())
    name = name.lstrip("._-")[:MAX_HOST_CHARS]
    return name if re.fullmatch(HOST_PATTERN, name) else "localhost"


class _Strict(BaseModel):
    """Frozen, and unknown keys are errors (a typo must not be silently ignored)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
