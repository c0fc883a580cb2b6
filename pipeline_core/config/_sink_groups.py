"""Sink groups: which sinks a pipeline delivers to, and with which Flume processor."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from pipeline_core._compat import Self, StrEnum
from pipeline_core.config._base import NAME_PATTERN, _Strict


class HandoffSinkConfig(_Strict):
    """The handoff sink: sealed Parquet batches for the Spark landing job (tuned under the
    pipeline's ``handoff`` key). A pipeline has exactly one, alone in a ``default`` group."""

    type: Literal["handoff"] = "handoff"


class ProcessorKind(StrEnum):
    """Flume's sink processors."""

    DEFAULT = "default"
    """Exactly one sink."""
    FAILOVER = "failover"
    """The live sink of highest priority delivers; failed sinks sit out a growing penalty."""
    LOAD_BALANCE = "load_balance"
    """Batches spread over the sinks by the selector; a failing sink's batch goes to the next."""


class SelectorKind(StrEnum):
    ROUND_ROBIN = "round_robin"
    RANDOM = "random"


class RewindKind(StrEnum):
    """What happens to a ring batch that no sink of the group could take."""

    SIMPLE = "simple"
    """Retry it until a sink takes it (nothing is dropped; the group holds the ring back)."""
    EVENTUALLY_GIVE_UP = "eventually_give_up"
    """Retry ``rewind_max_attempts`` times, then stop the collector with the error."""
    PAUSE = "pause"
    """Like ``simple``, pausing ``rewind_pause_ms`` more before each retry."""


class SinkGroupConfig(_Strict):
    """One sink group: consumed from the ring by its own thread, delivered by its processor.

    Defaults are Flume's: runner backoff 1 s more per empty poll up to 5 s, failover penalty up
    to 30 s, load-balancing exclusion up to 30 s.
    """

    name: Annotated[str, Field(pattern=NAME_PATTERN)]
    processor: ProcessorKind = ProcessorKind.DEFAULT
    sinks: Annotated[list[str], Field(min_length=1)]
    priorities: dict[str, int] = {}
    """``failover``: higher wins; sinks not listed rank below every listed one, in list order."""
    max_penalty_s: Annotated[float, Field(gt=0)] = 30.0
    selector: SelectorKind = SelectorKind.ROUND_ROBIN
    backoff: bool = False
    """``load_balance``: exclude a failed sink for a time that doubles with each failure."""
    max_timeout_s: Annotated[float, Field(gt=0)] = 30.0
    backoff_sleep_increment_s: Annotated[float, Field(ge=0)] = 1.0
    max_backoff_sleep_s: Annotated[float, Field(ge=0)] = 5.0
    rewind: RewindKind = RewindKind.SIMPLE
    rewind_max_attempts: Annotated[int, Field(ge=1)] = 3
    rewind_pause_ms: Annotated[int, Field(ge=0)] = 1000

    @model_validator(mode="after")
    def _processor_fits_the_sinks(self) -> Self:
        if len(set(self.sinks)) != len(self.sinks):
            raise ValueError(f"sink group {self.name!r} lists a sink twice")
        count = len(self.sinks)
        if self.processor is ProcessorKind.DEFAULT and count != 1:
            raise ValueError(
                f"sink group {self.name!r}: processor 'default' takes exactly one sink, got "
                f"{count} (use 'failover' or 'load_balance')"
            )
        if self.processor is ProcessorKind.LOAD_BALANCE and count < 2:
            raise ValueError(f"sink group {self.name!r}: 'load_balance' needs at least two sinks")
        unknown = sorted(set(self.priorities) - set(self.sinks))
        if unknown:
            raise ValueError(
                f"sink group {self.name!r}: priorities name sinks not in the group: "
                + ", ".join(unknown)
            )
        return self
