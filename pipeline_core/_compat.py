"""The few parts of Python 3.11's standard library Sluice uses that Python 3.10 lacks.

Import ``StrEnum`` and ``Self`` from here, never from ``enum``/``typing``, so that the
package runs on every Python it declares (3.10 to 3.13). On 3.11 and later these are the
standard library's own objects.
"""

from __future__ import annotations

import sys

if sys.version_info >= (3, 11):
    from enum import StrEnum
    from typing import Self
else:  # pragma: no cover - exercised by the Python 3.10 test tier
    from backports.strenum import StrEnum
    from typing_extensions import Self

__all__ = ["Self", "StrEnum"]
