"""The pipelines a collector serves: by name, in reading order, each in its lifecycle state."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from pipeline_core.collector._lifecycle import PipelineState
from pipeline_core.collector._pipeline import PipelineRuntime
from pipeline_core.config import PipelineConfig
from pipeline_core.mailbox import IllegalThreadError, TaskMailbox
from pipeline_core.metastore import Metastore

RegistryListener = Callable[[tuple[PipelineRuntime, ...]], None]
"""Told, on the mailbox thread, every pipeline served after each change of the registry."""


@dataclass(frozen=True)
class Replacement:
    """The changed config a REPLACING pipeline is served again from once sealed."""

    config: PipelineConfig
    metastore: Metastore


def reading_order(runtimes: Iterable[PipelineRuntime]) -> list[PipelineRuntime]:
    """Higher priorities first, then by name: the order of the reader's rounds."""
    return sorted(runtimes, key=lambda runtime: (-runtime.priority, runtime.name))


class PipelineRegistry:
    """Which pipelines a collector serves, and where each one is in its lifecycle.

    Every state change is a :meth:`move`, checked against the lifecycle's ``TRANSITIONS``
    (an illegal one raises ``IllegalPipelineTransitionError``). Listeners (the control loop)
    are told after every change.

    Threading model: mutated on the collector's mailbox thread only: :meth:`add`,
    :meth:`move`, :meth:`remove`, :meth:`quiesce` and :meth:`subscribe` check the caller and
    raise ``IllegalThreadError`` on any other thread, and before :meth:`bind` (no run, no
    mailbox thread). The reads may be called from any thread (metrics, the send stage): they
    see tuples replaced whole at each change, never one being built.

    Lifecycle: OPEN (pipelines come and go) -> QUIESCED (:meth:`quiesce`, the collector is
    stopping: no pipeline is added any more).
    """

    def __init__(self) -> None:
        self._mailbox: TaskMailbox | None = None
        self._by_name: dict[str, PipelineRuntime] = {}
        self._served: tuple[PipelineRuntime, ...] = ()  # in the order they were added
        self._order: tuple[PipelineRuntime, ...] = ()  # reading order
        self._replacements: dict[str, Replacement] = {}
        self._listeners: list[RegistryListener] = []
        self._accepting = True

    def bind(self, mailbox: TaskMailbox) -> None:
        """Make ``mailbox``'s owner the only thread allowed to change the registry (at the
        start of the run, on that thread)."""
        mailbox.check_mailbox_thread("PipelineRegistry.bind()")
        self._mailbox = mailbox

    # -- reads (any thread) ------------------------------------------------------------------

    def get(self, name: str) -> PipelineRuntime | None:
        return self._by_name.get(name)

    def runtime(self, name: str) -> PipelineRuntime:
        """Raises ``KeyError`` for a pipeline not served."""
        return self._by_name[name]

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    def runtimes(self) -> tuple[PipelineRuntime, ...]:
        """Every pipeline served, in the order they were added."""
        return self._served

    def names(self) -> list[str]:
        """Every pipeline served, in reading order."""
        return [runtime.name for runtime in self._order]

    def reading(self) -> list[PipelineRuntime]:
        """The READING pipelines, in reading order."""
        return [runtime for runtime in self._order if runtime.state is PipelineState.READING]

    def any_reading(self) -> bool:
        return any(runtime.state is PipelineState.READING for runtime in self._served)

    def all_done(self) -> bool:
        """True when every pipeline served is DONE (also when none is)."""
        return all(runtime.state is PipelineState.DONE for runtime in self._served)

    def replacement(self, name: str) -> Replacement | None:
        """What a REPLACING pipeline is to be served again from."""
        return self._replacements.get(name)

    @property
    def accepting(self) -> bool:
        """False once quiesced: no pipeline is added any more."""
        return self._accepting

    # -- changes (mailbox thread) ------------------------------------------------------------

    def subscribe(self, listener: RegistryListener) -> None:
        self._check_thread("subscribe")
        self._listeners.append(listener)

    def add(self, runtime: PipelineRuntime) -> None:
        """Serve a READING pipeline.

        Raises:
            ValueError: a pipeline of its name is served already, the registry is quiesced,
                or the pipeline is not READING.
        """
        self._check_thread("add")
        if not self._accepting:
            raise ValueError(f"pipeline {runtime.name!r}: the collector is stopping")
        if runtime.name in self._by_name:
            raise ValueError(f"pipeline {runtime.name!r} is served already")
        if runtime.state is not PipelineState.READING:
            raise ValueError(f"pipeline {runtime.name!r} is {runtime.state.value}, not reading")
        self._by_name[runtime.name] = runtime
        self._served = (*self._served, runtime)
        self._order = tuple(reading_order(self._served))
        self._changed()

    def move(
        self,
        runtime: PipelineRuntime,
        target: PipelineState,
        replacement: Replacement | None = None,
    ) -> None:
        """Move a served pipeline to ``target`` (REPLACING: with its ``replacement``).

        Raises:
            IllegalPipelineTransitionError: its lifecycle does not allow the move.
            ValueError: ``replacement`` is missing for REPLACING or given for another state.
        """
        self._check_thread("move")
        runtime.state.check_transition(runtime.name, target)
        if (replacement is not None) != (target is PipelineState.REPLACING):
            raise ValueError(f"pipeline {runtime.name!r}: a replacement goes with REPLACING only")
        runtime.state = target
        if target is not PipelineState.READING:
            runtime.mark_blocked(False)  # it reads no more: its time blocked stops counting
        if replacement is not None:
            self._replacements[runtime.name] = replacement
        else:
            self._replacements.pop(runtime.name, None)
        self._changed()

    def remove(self, runtime: PipelineRuntime, final: PipelineState) -> None:
        """Stop serving a sealed pipeline: move it to ``final`` (REMOVED or REPLACED) and drop
        it.

        Raises:
            IllegalPipelineTransitionError: its lifecycle does not allow the move.
            ValueError: ``final`` is neither REMOVED nor REPLACED.
        """
        self._check_thread("remove")
        if final not in (PipelineState.REMOVED, PipelineState.REPLACED):
            raise ValueError(f"pipeline {runtime.name!r}: removed as {final.value}")
        runtime.state.check_transition(runtime.name, final)
        runtime.state = final
        self._replacements.pop(runtime.name, None)
        del self._by_name[runtime.name]
        self._served = tuple(served for served in self._served if served is not runtime)
        self._order = tuple(served for served in self._order if served is not runtime)
        self._changed()

    def quiesce(self) -> None:
        """Add no pipeline any more (the collector is stopping). Idempotent."""
        self._check_thread("quiesce")
        self._accepting = False

    # -- internals -----------------------------------------------------------------------------

    def _changed(self) -> None:
        served = self._served
        for listener in self._listeners:
            listener(served)

    def _check_thread(self, method: str) -> None:
        if self._mailbox is None:
            raise IllegalThreadError(
                f"PipelineRegistry.{method}() needs the collector's mailbox thread: "
                "the collector is not running"
            )
        self._mailbox.check_mailbox_thread(f"PipelineRegistry.{method}()")
