"""``SLUICE_TEST_SHARD`` splits the selected tests: the shares are disjoint, together they are
the whole selection, each samples the modules, and a bad value is refused by name.

The runs are pytest's own, in this process (``pytester``), over a small suite of generated
modules with the sharding plugin loaded as the suite's conftest loads it."""

from __future__ import annotations

import pytest

from tests.support.sharding import SHARD_ENV, shard_of

PLUGIN = "tests.support.sharding"


@pytest.fixture
def suite(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """Four modules of unequal size (one with a parametrized test), some tests marked slow.
    pytest runs over it with no plugin but the sharding one (none loaded by entry point)."""
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    pytester.makeini("[pytest]\nmarkers =\n    slow: a slow test\n")
    for module, count in (("alpha", 20), ("beta", 7), ("gamma", 3), ("delta", 1)):
        tests = "\n".join(
            f"@pytest.mark.slow\ndef test_{n}(): pass" if n % 4 == 3 else f"def test_{n}(): pass"
            for n in range(count)
        )
        pytester.makepyfile(**{f"test_{module}": f"import pytest\n{tests}\n"})
    pytester.makepyfile(
        test_params="import pytest\n@pytest.mark.parametrize('x', range(5))\ndef test_p(x): pass\n"
    )
    return pytester


def collected(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, shard: str | None
) -> tuple[int, list[str]]:
    if shard is None:
        monkeypatch.delenv(SHARD_ENV, raising=False)
    else:
        monkeypatch.setenv(SHARD_ENV, shard)
    result = suite.runpytest_inprocess("--collect-only", "-q", "-p", PLUGIN, "-m", "not slow")
    return int(result.ret), [line for line in result.outlines if "::" in line]


def test_the_shares_split_the_selection_and_cover_it(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    status, everything = collected(suite, monkeypatch, None)
    assert status == 0 and len(everything) >= 30
    assert not any("test_3" in test.partition("::")[2] for test in everything)  # -m applied
    shares = [collected(suite, monkeypatch, f"{index}/3")[1] for index in range(3)]

    assert sorted(test for share in shares for test in share) == sorted(everything)
    assert all(len(share) in (len(everything) // 3, len(everything) // 3 + 1) for share in shares)
    files = {test.partition("::")[0] for test in everything}
    busiest = max(files, key=lambda file: sum(t.startswith(file + "::") for t in everything))
    assert all(any(test.startswith(busiest + "::") for test in share) for share in shares)


@pytest.mark.parametrize("value", ["3/3", "1", "a/b", "-1/2", "0/0"])
def test_a_bad_share_is_refused_naming_the_variable(value: str) -> None:
    with pytest.raises(pytest.UsageError, match=f"{SHARD_ENV}={value!r}"):
        shard_of(value)


def test_pytest_stops_on_a_bad_share(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(SHARD_ENV, "3/3")
    result = suite.runpytest_inprocess("--collect-only", "-q", "-p", PLUGIN)

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert f"{SHARD_ENV}='3/3'" in "\n".join(result.outlines + result.errlines)
