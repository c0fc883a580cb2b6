"""The fault matrix: every test gets a replayable seed (``SLUICE_FAULT_SEED``), shown in its
report; helpers live in :mod:`tests.support.faults`."""

from __future__ import annotations

from collections.abc import Generator

import pytest

from tests.support.faults import FIGURES_KEY, SEED_ENV, SEED_KEY, FaultSeed, fault_seed

__all__ = ["fault_seed"]


@pytest.fixture(autouse=True)
def every_test_has_a_seed(fault_seed: FaultSeed) -> None:
    """Even a test without random choices prints and reports its seed."""


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    seed = item.stash.get(SEED_KEY, None)
    if seed is not None and report.when == "call":
        report.sections.append(("fault seed", f"replay with {SEED_ENV}={seed}"))
    return report


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    figures = terminalreporter.config.stash.get(FIGURES_KEY, [])
    if figures:
        terminalreporter.section("fault matrix")
        for line in figures:
            terminalreporter.write_line(line)
