"""One owner thread: collector state changes only on the mailbox thread.

Every mail handler checks its thread first (called from another thread it raises), and a real
run, with pipelines added, replaced and removed, acks, checkpoints and a stop, changes the
registry, the pipelines, their ackers and checkpoints only on the thread that runs it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, cast

import pytest

from pipeline_core.acker import Acker
from pipeline_core.collector import Collector, CollectorMode, PipelineState
from pipeline_core.collector import _collector as collector_module
from pipeline_core.collector._checkpoints import CheckpointCoordinator
from pipeline_core.collector._collector import _Run
from pipeline_core.collector._pipeline import PipelineRuntime
from pipeline_core.collector._registry import PipelineRegistry, Replacement
from pipeline_core.collector._results import RunResults
from pipeline_core.collector._scheduler import ReadScheduler
from pipeline_core.collector._sink_group import BarrierPassed
from pipeline_core.collector._stages import StageQueues
from pipeline_core.config import PipelineConfig
from pipeline_core.mailbox import IllegalThreadError, MailboxDefaultAction
from pipeline_core.metastore import CheckpointState, Metastore
from pipeline_core.testing import RecordingSink, append, lines, wait_until
from tests.pipeline_core.collector.support import Tailing, delivered, with_stub_group
from tests.pipeline_core.mailbox.support import run_on_other_thread
from tests.support.pipelines import load


@pytest.fixture
def config(tmp_path: Path, metastore_url: str) -> PipelineConfig:
    return load(tmp_path, metastore_url)


@pytest.fixture
def run() -> Iterator[_Run]:
    """A run's parts, wired on this thread (its mailbox thread), never started."""
    registry = PipelineRegistry()
    parts = _Run(registry, StageQueues(registry.get), CollectorMode.CONTINUOUS, 0.025, "test")
    yield parts
    parts.processor.close()


Handler = Callable[[_Run, PipelineConfig, Metastore], object]

NOT_A_RUNTIME = cast(PipelineRuntime, object())
NOT_A_CONTROLLER = cast(MailboxDefaultAction.Controller, object())

HANDLERS: list[tuple[str, Handler]] = [
    ("Feedback._on_queue_writable", lambda run, c, m: run.feedback._on_queue_writable("web")),
    ("Feedback._on_acks", lambda run, c, m: run.feedback._on_acks("web", [(1, 1)])),
    ("Feedback._on_sweep", lambda run, c, m: run.feedback._on_sweep()),
    ("Feedback._on_file_events", lambda run, c, m: run.feedback._on_file_events()),
    ("CheckpointDriver.start_pipeline", lambda run, c, m: run.driver.start_pipeline(c, m, None)),
    ("CheckpointDriver.begin_stop", lambda run, c, m: run.driver.begin_stop()),
    (
        "CheckpointDriver.begin_removal",
        lambda run, c, m: run.driver.begin_removal("web", Replacement(c, m)),
    ),
    (
        "CheckpointDriver._inject_requested",
        lambda run, c, m: run.driver._inject_requested("web", 1),
    ),
    (
        "CheckpointDriver._on_barrier_passed",
        lambda run, c, m: run.driver._on_barrier_passed("web", BarrierPassed("lake", 1, None)),
    ),
    (
        "CheckpointDriver._on_uploaded",
        lambda run, c, m: run.driver._on_uploaded("web", 1, "s3://bucket/staging/web/00000001/a"),
    ),
    (
        "ReadScheduler.run_default_action",
        lambda run, c, m: run.scheduler.run_default_action(NOT_A_CONTROLLER),
    ),
    (
        "PipelineLauncher.launch",
        lambda run, c, m: run.launcher.launch(
            c, m, None, run.driver.barrier_passed, run.driver.upload_feedback
        ),
    ),
    (
        "PipelineLauncher.serve",
        lambda run, c, m: run.launcher.serve(
            NOT_A_RUNTIME, run.driver.barrier_passed, run.driver.upload_feedback
        ),
    ),
    (
        "PipelineLauncher.retire",
        lambda run, c, m: run.launcher.retire(NOT_A_RUNTIME, PipelineState.REMOVED),
    ),
    ("PipelineRegistry.add", lambda run, c, m: run.registry.add(NOT_A_RUNTIME)),
    (
        "PipelineRegistry.move",
        lambda run, c, m: run.registry.move(NOT_A_RUNTIME, PipelineState.DONE),
    ),
    (
        "PipelineRegistry.remove",
        lambda run, c, m: run.registry.remove(NOT_A_RUNTIME, PipelineState.REMOVED),
    ),
    ("PipelineRegistry.quiesce", lambda run, c, m: run.registry.quiesce()),
    ("PipelineRegistry.subscribe", lambda run, c, m: run.registry.subscribe(lambda s: None)),
    ("RunResults.record_finished", lambda run, c, m: run.results.record_finished(NOT_A_RUNTIME)),
]
"""Every mail handler of a run, and every change of its registry and results (the thread is
checked before the arguments are looked at)."""


@pytest.mark.timeout(20)
@pytest.mark.parametrize(("name", "handler"), HANDLERS, ids=[name for name, _ in HANDLERS])
def test_should_refuse_a_handler_called_off_the_mailbox_thread(
    run: _Run, config: PipelineConfig, metastore: Metastore, name: str, handler: Handler
) -> None:
    with pytest.raises(IllegalThreadError, match=rf"{name}\(\).*MainThread.*'other'"):
        run_on_other_thread(lambda: handler(run, config, metastore))
    assert run.registry.accepting  # nothing happened


def test_should_run_a_handler_on_the_mailbox_thread(run: _Run) -> None:
    run.driver.begin_stop()  # no pipeline: nothing to seal

    assert not run.registry.accepting
    assert run.processor.has_mail()  # all actions completed: the loop would end


# -- a real run --------------------------------------------------------------------------------


class Changes:
    """Who changed what, on which thread."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.seen: list[tuple[str, threading.Thread]] = []
        self._monkeypatch = monkeypatch

    def note(self, what: str) -> None:
        self.seen.append((what, threading.current_thread()))

    def of(self, what: str) -> list[threading.Thread]:
        return [thread for name, thread in self.seen if name == what]

    def noting(self, what: str, change: Callable[..., Any]) -> Callable[..., Any]:
        def noted(*args: Any, **kwargs: Any) -> Any:
            self.note(what)
            return change(*args, **kwargs)

        return noted

    def watch_calls(self, cls: type[Any], *methods: str) -> None:
        for method in methods:
            noted = self.noting(f"{cls.__name__}.{method}", getattr(cls, method))
            self._monkeypatch.setattr(cls, method, noted)

    def watch_fields(self, cls: type[Any], *exempt: str) -> None:
        """Every field set again after construction (a change, not an initial value)."""

        def set_noted(instance: Any, name: str, value: Any) -> None:
            if name in vars(instance) and name not in exempt:
                self.note(f"{cls.__name__}.{name}=")
            object.__setattr__(instance, name, value)

        self._monkeypatch.setattr(cls, "__setattr__", set_noted)


class RecordingRegistry(PipelineRegistry):
    """A registry noting the thread of every change."""

    def __init__(self, changes: Changes) -> None:
        super().__init__()
        for method in ("bind", "subscribe", "add", "move", "remove", "quiesce"):
            setattr(
                self, method, changes.noting(f"PipelineRegistry.{method}", getattr(self, method))
            )


@pytest.mark.timeout(90)
def test_should_change_collector_state_on_the_mailbox_thread_only(
    tmp_path: Path, metastore_url: str, metastore: Metastore, monkeypatch: pytest.MonkeyPatch
) -> None:
    changes = Changes(monkeypatch)
    monkeypatch.setattr(collector_module, "PipelineRegistry", lambda: RecordingRegistry(changes))
    changes.watch_calls(RunResults, "record_sealed", "record_finished")
    changes.watch_calls(Acker, "init", "ack_all", "sweep")
    changes.watch_calls(CheckpointCoordinator, "barrier", "passed")
    # The send stage counts what it sends: the one field another thread writes.
    changes.watch_fields(PipelineRuntime, "bytes_sent")
    changes.watch_fields(ReadScheduler)
    # A sweep every half second.
    first = with_stub_group(
        tmp_path / "first", metastore_url, name="first", collector={"acker_timeout_s": 1.5}
    )
    second = load(tmp_path / "second", metastore_url, name="second")
    append(tmp_path / "first" / "logs" / "access.log", *lines("a", 200))
    sink = RecordingSink("stub")
    collector = Collector(first, metastore, sinks={"stub": sink})
    tailing = Tailing(collector.run, collector.stop)

    wait_until(lambda: delivered(sink) == lines("a", 200))
    requested = metastore.request_checkpoint("first", "run-1").checkpoint_id
    wait_until(lambda: metastore.checkpoint(requested).state is CheckpointState.SEALED)
    collector.add_pipeline(second, metastore)
    wait_until(lambda: "second" in collector.pipelines)
    changed = second.model_copy(
        update={"collector": second.collector.model_copy(update={"read_chunk_bytes": 8192})}
    )
    collector.replace_pipeline(changed, metastore)
    wait_until(lambda: len(changes.of("PipelineRegistry.remove")) == 1)
    collector.remove_pipeline("second")
    wait_until(lambda: collector.pipelines == ["first"])
    append(tmp_path / "first" / "logs" / "access.log", *lines("b", 50))
    wait_until(lambda: delivered(sink) == lines("a", 200) + lines("b", 50))
    wait_until(lambda: bool(changes.of("Acker.sweep")))
    tailing.stop()

    (mailbox_thread,) = changes.of("PipelineRegistry.bind")
    assert mailbox_thread is not threading.main_thread()
    elsewhere = sorted({what for what, thread in changes.seen if thread is not mailbox_thread})
    assert elsewhere == []
    done = {what for what, _ in changes.seen}
    assert {
        "PipelineRegistry.add",
        "PipelineRegistry.move",
        "PipelineRegistry.remove",
        "PipelineRegistry.quiesce",
        "RunResults.record_sealed",
        "Acker.ack_all",
        "Acker.sweep",
        "CheckpointCoordinator.passed",
        "PipelineRuntime.state=",
        "PipelineRuntime.lines=",
        "ReadScheduler._cursor=",
    } <= done
