"""What every config model shares: strictness and the name pattern."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

NAME_PATTERN = r"^[a-z][a-z0-9_]{0,62}$"


class _Strict(BaseModel):
    """Frozen, and unknown keys are errors (a typo must not be silently ignored)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
