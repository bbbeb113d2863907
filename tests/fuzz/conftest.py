"""The fuzzers' setup: the ``fuzz`` marker, the CLI's command tree built once per session
(building it costs 15 ms, the inputs themselves about 1 ms), a private data and state
directory, and the counts of every fuzzer printed at the end of the session."""

from __future__ import annotations

import functools
from collections.abc import Iterator

import pytest

import iowall.cli.main as cli_main

from .harness import TALLIES


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "fuzz: property-based fuzzers of the CLI's inputs "
        "(hypothesis, 1,000 inputs each in make test, "
        "10,000 in make fuzz)",
    )


@pytest.fixture(scope="session", autouse=True)
def _fuzz_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """No fuzzer reaches the user's store or state: XDG dirs and IOWALL_DB point to tmp."""
    home = tmp_path_factory.mktemp("fuzz-home")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("XDG_DATA_HOME", str(home / "data"))
        mp.setenv("XDG_STATE_HOME", str(home / "state"))
        mp.setenv("IOWALL_DB", f"sqlite:///{home / 'default.db'}")
        mp.setattr(cli_main, "command", functools.cache(cli_main.command))
        yield


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if TALLIES:
        terminalreporter.section("fuzz counts")
        for t in TALLIES:
            terminalreporter.write_line(t.line())
