"""LeaseHolder and ProcessIdentity: the stored form, and proving a holder dead from its
machine, with real processes."""

from __future__ import annotations

import dataclasses
import os

import pytest

from pipeline_core.metastore import HolderLiveness, LeaseHolder, ProcessIdentity
from pipeline_core.metastore._lease_holder import MAX_HOLDER_CHARS, holder_liveness
from tests.support.lease_holders import HolderProcess

pytestmark = pytest.mark.skipif(
    not os.path.exists("/proc/sys/kernel/random/boot_id"), reason="needs Linux's /proc"
)

OTHER_BOOT = "0" * 32


def holder(process: ProcessIdentity, host: str = "web-1") -> LeaseHolder:
    return LeaseHolder(host, process, "ab12cd34")


def this_process(**changes: object) -> ProcessIdentity:
    return dataclasses.replace(ProcessIdentity.current(), **changes)  # type: ignore[arg-type]


# -- the stored form -------------------------------------------------------------------------------


def test_should_read_back_the_holder_it_formats() -> None:
    mine = LeaseHolder.of_this_process("web-1", "ab12cd34")

    text = mine.format()

    assert text.startswith(f"web-1:{os.getpid()}:ab12cd34 boot=")
    assert LeaseHolder.parse(text) == mine


def test_should_write_and_read_back_fields_it_could_not_read() -> None:
    unknown = holder(ProcessIdentity(42, None, None, None, None), host="db:primary 1")

    text = unknown.format()

    assert text == "db:primary 1:42:ab12cd34 boot=- start=- pidns=- machine=-"
    assert LeaseHolder.parse(text) == unknown


def test_should_shorten_a_long_host_to_fit_the_holder_column() -> None:
    long = holder(ProcessIdentity.current(), host="h" * 300)

    text = long.format()

    assert len(text) == MAX_HOLDER_CHARS
    parsed = LeaseHolder.parse(text)
    assert parsed is not None and parsed.process == long.process


@pytest.mark.parametrize(
    "text",
    [
        "web-1:4242:ab12cd34",  # the older form
        "collector-a",
        "web-1:0:ab12cd34 boot=- start=- pidns=- machine=-",
        "web-1:-3:ab12cd34 boot=- start=- pidns=- machine=-",
        "web-1:99999999999:ab12cd34 boot=- start=- pidns=- machine=-",
        ":4242:ab12cd34 boot=- start=- pidns=- machine=-",
        "web-1:4242:ab12cd34 boot=- start=soon pidns=- machine=-",
        "web-1:4242:ab12cd34 start=- boot=- pidns=- machine=-",
        "web-1:4242:ab12cd34 boot=- start=- pidns=-",
    ],
)
def test_should_not_read_a_holder_in_another_form(text: str) -> None:
    assert LeaseHolder.parse(text) is None
    assert holder_liveness(text) is HolderLiveness.UNKNOWN


# -- liveness --------------------------------------------------------------------------------------


def test_should_see_this_process_alive() -> None:
    mine = LeaseHolder.of_this_process("web-1", "ab12cd34")

    assert mine.liveness() is HolderLiveness.ALIVE
    assert not mine.is_dead_on_this_host()


def test_should_see_a_running_process_alive_and_a_killed_one_exited() -> None:
    with HolderProcess("web-1") as child:
        assert child.parsed.liveness() is HolderLiveness.ALIVE

        child.kill()

        assert child.parsed.liveness() is HolderLiveness.EXITED
        assert child.parsed.is_dead_on_this_host()


def test_should_see_a_killed_process_not_yet_reaped_exited() -> None:
    with HolderProcess("web-1") as child:
        child.kill_leaving_a_zombie()

        assert child.parsed.liveness() is HolderLiveness.EXITED


def test_should_see_a_reused_pid_as_a_dead_holder() -> None:
    start = ProcessIdentity.current().start_ticks
    assert start is not None

    reused = holder(this_process(start_ticks=start - 1))  # this pid, an earlier process

    assert reused.liveness() is HolderLiveness.PID_REUSED
    assert reused.is_dead_on_this_host()


def test_should_see_a_holder_from_an_earlier_boot_of_this_machine_dead() -> None:
    mine = ProcessIdentity.current()
    if mine.machine is None:
        pytest.skip("this machine has no machine id")

    earlier = holder(this_process(boot_id=OTHER_BOOT))

    assert earlier.liveness() is HolderLiveness.EARLIER_BOOT


@pytest.mark.parametrize(
    "changes",
    [
        {"boot_id": OTHER_BOOT, "machine": "f" * 16},  # another machine
        {"boot_id": OTHER_BOOT, "machine": None},  # another machine, or none to compare
        {"pid_namespace": "1"},  # another container on this machine
        {"boot_id": None},
    ],
    ids=["other-machine", "no-machine-id", "other-pid-namespace", "no-boot-id"],
)
def test_should_not_prove_dead_what_it_cannot_see(changes: dict[str, object]) -> None:
    with HolderProcess("web-1") as child:
        child.kill()
        hidden = holder(dataclasses.replace(child.parsed.process, **changes))  # type: ignore[arg-type]

        assert hidden.liveness() is HolderLiveness.UNKNOWN
        assert not hidden.is_dead_on_this_host()


def test_should_not_prove_dead_a_holder_without_a_start_time_whose_pid_runs() -> None:
    with HolderProcess("web-1") as child:
        undated = holder(dataclasses.replace(child.parsed.process, start_ticks=None))

        assert undated.liveness() is HolderLiveness.UNKNOWN
        child.kill()
        assert undated.liveness() is HolderLiveness.EXITED  # no process has its pid at all
