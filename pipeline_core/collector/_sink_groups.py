"""Build a pipeline's sink groups from its config: sinks, processor, runner, rewind strategy."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pipeline_core.config import (
    HandoffSinkConfig,
    PipelineConfig,
    ProcessorKind,
    RewindKind,
    SinkGroupConfig,
)
from pipeline_core.ring import (
    BatchRewindStrategy,
    EventuallyGiveUpBatchRewindStrategy,
    NanosecondPauseBatchRewindStrategy,
    SimpleBatchRewindStrategy,
)
from pipeline_core.sinks import (
    BatchChannel,
    DefaultSinkProcessor,
    FailoverSinkProcessor,
    HandoffSink,
    HandoffWriter,
    LoadBalancingSinkProcessor,
    Sink,
    SinkProcessor,
    SinkRunner,
    SinkSelector,
    SinkStateStore,
    build_sink,
)


@dataclass(frozen=True)
class SinkGroup:
    """One sink group, ready to be put on the ring by the collector."""

    name: str
    processor: SinkProcessor
    runner: SinkRunner
    channel: BatchChannel
    rewind_strategy: BatchRewindStrategy

    @property
    def holds_handoff(self) -> bool:
        """Whether this is the group of the handoff sink (the lake's batches)."""
        return any(isinstance(sink, HandoffSink) for sink in self.processor.sinks)


def build_sink_groups(
    config: PipelineConfig,
    writer: HandoffWriter,
    states: SinkStateStore,
    made_in_code: Mapping[str, Sink] | None = None,
) -> list[SinkGroup]:
    """The pipeline's sink groups, in config order; the handoff sink stages through ``writer``.

    ``made_in_code`` maps sink names to sinks built by the caller (custom destinations, test
    doubles); each replaces the config's sink of that name.
    """

    def sink(name: str) -> Sink:
        if made_in_code and name in made_in_code:
            return made_in_code[name]
        sink_config = config.sinks[name]
        if isinstance(sink_config, HandoffSinkConfig):
            return HandoffSink(name, writer)
        return build_sink(name, sink_config, data_dir=config.data_dir)

    groups = []
    for group in config.sink_groups_in_force:
        processor = _processor(group, [sink(name) for name in group.sinks], states)
        runner = SinkRunner(
            processor,
            backoff_sleep_increment=group.backoff_sleep_increment_s,
            max_backoff_sleep=group.max_backoff_sleep_s,
        )
        groups.append(
            SinkGroup(group.name, processor, runner, BatchChannel(), _rewind_strategy(group))
        )
    return groups


def _processor(group: SinkGroupConfig, sinks: list[Sink], states: SinkStateStore) -> SinkProcessor:
    match group.processor:
        case ProcessorKind.DEFAULT:
            return DefaultSinkProcessor(group.name, sinks[0])
        case ProcessorKind.FAILOVER:
            return FailoverSinkProcessor(
                group.name,
                sinks,
                group.priorities,
                max_penalty=group.max_penalty_s,
                state=states,
            )
        case ProcessorKind.LOAD_BALANCE:
            return LoadBalancingSinkProcessor(
                group.name,
                sinks,
                selector=SinkSelector(group.selector.value),
                backoff=group.backoff,
                max_timeout=group.max_timeout_s,
                state=states,
            )


def _rewind_strategy(group: SinkGroupConfig) -> BatchRewindStrategy:
    match group.rewind:
        case RewindKind.SIMPLE:
            return SimpleBatchRewindStrategy()
        case RewindKind.EVENTUALLY_GIVE_UP:
            return EventuallyGiveUpBatchRewindStrategy(group.rewind_max_attempts)
        case RewindKind.PAUSE:
            return NanosecondPauseBatchRewindStrategy(group.rewind_pause_ms * 1_000_000)
