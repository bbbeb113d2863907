"""What a new user meets first: the help wraps sentences where the terminal ends (not where
the source's lines did), progress lines off a terminal say how far and how long is left, and
the busy-machine note measures what other work takes now, not the load average set-up left."""

from __future__ import annotations

import pytest

from iowall.cli.lazy import flow, summary
from iowall.cli.main import COMMANDS
from iowall.cli.progress import where_we_are
from iowall.machine import sysinfo


def test_help_paragraphs_flow() -> None:
    assert flow("Measure the ceilings at rising job counts; say\n    where the wall is.") == (
        "Measure the ceilings at rising job counts; say where the wall is."
    )
    assert flow("First line\nof one.\n\nSecond\nparagraph.") == "First line of one.\n\nSecond paragraph."
    assert flow(None) is None
    for name, target in COMMANDS.items():
        text = summary(target)
        assert text is not None, name
        first = text.split("\n\n")[0]
        assert "\n" not in first, (name, first)


def test_the_explain_help_says_what_explain_does_now() -> None:
    text = summary(COMMANDS["explain"]) or ""
    assert "wall-clock time" in text and "mechanism" in text
    assert "where the CPU time went" not in text


def test_a_progress_line_says_how_far_and_how_long_is_left() -> None:
    assert where_we_are(0.0, 0.0, 5.0) == ""  # no total: nothing to say
    assert where_we_are(1.0, 100.0, 3.0) == " — 1% done, 3 s in"  # too early to scale
    assert where_we_are(25.0, 100.0, 190.0) == " — 25% done, 3 min 10 s in, about 9 min 30 s left"
    assert where_we_are(50.0, 100.0, 900.0) == " — 50% done, 15 min in, about 15 min left"
    assert where_we_are(120.0, 100.0, 900.0) == " — 100% done, 15 min in, about 0 s left"


def test_busy_cpus_reads_the_ticks_of_the_window(monkeypatch: pytest.MonkeyPatch) -> None:
    # cpu  user nice system idle iowait irq softirq steal
    stats = iter(
        [
            "cpu  100 0 100 800 0 0 0 0\ncpu0 1 0 0 0 0 0 0 0\n",
            "cpu  160 0 130 900 10 0 0 0\ncpu0 1 0 0 0 0 0 0 0\n",
        ]
    )
    monkeypatch.setattr(sysinfo, "read", lambda path: next(stats))
    monkeypatch.setattr(sysinfo.time, "sleep", lambda s: None)
    monkeypatch.setattr(sysinfo, "cpu_count", lambda: 2)
    # 90 busy ticks of 200 over the window, on 2 CPUs: 0.9 CPUs' worth of other work
    assert sysinfo.busy_cpus() == pytest.approx(0.9)
