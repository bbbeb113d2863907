"""The undo journal: found machine-wide whatever state directory a crashed process used,
newest first, children killed only when they are still the same process, and after a reboot
only files removed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from iowall.cli.recover import describe
from iowall.machine import journal
from tests.conftest import killed_after_setting_dirty_ratio, needs_root

DIRTY = "/proc/sys/vm/dirty_ratio"


@pytest.fixture
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "mine"))
    return tmp_path / "mine" / "iowall" / "journal"


@needs_root
def test_a_crash_under_another_state_dir_is_found(state: Path, tmp_path: Path) -> None:
    """The crashed process journaled under its own XDG_STATE_HOME; this one, with another,
    still finds and undoes it through the index in /run/iowall."""
    old = Path(DIRTY).read_text().strip()
    new = "7" if old != "7" else "9"
    theirs = tmp_path / "theirs"
    killed_after_setting_dirty_ratio(new, theirs)
    assert Path(DIRTY).read_text().strip() == new
    assert theirs / "iowall" / "journal" in journal.journal_dirs()
    undone = journal.recover()
    assert Path(DIRTY).read_text().strip() == old
    assert any(a.get("path") == DIRTY for a in undone)
    assert not list((theirs / "iowall" / "journal").glob("*.json"))


def test_after_a_reboot_only_files_are_removed(state: Path, tmp_path: Path) -> None:
    """Entries of an earlier boot: the kernel dropped mounts and knob values already, so a
    stale knob value is never written back; the image file is still removed."""
    image = tmp_path / "iowall-old.img"
    image.write_text("x")
    knob = tmp_path / "knob"
    knob.write_text("now")
    state.mkdir(parents=True)
    for i, action in enumerate(
        [{"undo": "unlink", "path": str(image)}, {"undo": "write", "path": str(knob), "value": "stale"}]
    ):
        (state / f"{i:020d}-1-000000.json").write_text(
            json.dumps({"pid": 1, "boot": "an-earlier-boot", **action})
        )
    journal.recover()
    assert not image.exists() and knob.read_text() == "now"
    assert not list(state.glob("*.json"))


def test_entries_of_a_live_process_stay(state: Path, tmp_path: Path) -> None:
    f = tmp_path / "f"
    f.write_text("x")
    token = journal.add({"undo": "unlink", "path": str(f)})
    journal.recover()
    assert f.exists() and token.exists()
    journal.done(token)


def test_children_start_with_no_signal_blocked(state: Path) -> None:
    """A child started while iowall shields itself would inherit SIGINT and SIGTERM blocked
    and ignore the signal it is stopped with (perf then writes no trailer)."""
    from iowall.machine.proc import run_child

    out = run_child(["grep", "SigBlk", "/proc/self/status"]).stdout
    assert out.split()[-1] == "0000000000000000", out
    assert not list(state.glob("*.json"))


def test_a_marked_child_and_all_it_forked_are_killed(state: Path) -> None:
    """The entry exists before the child does; its mark, inherited by everything the child
    forks, is how recovery finds them (no window in which a SIGKILL of iowall orphans it)."""
    token, env = journal.child("sh")
    sh = subprocess.Popen(["sh", "-c", "sleep 300 & sleep 301 & wait"], env=env, start_new_session=True)
    try:
        time.sleep(0.3)
        mark = json.loads(token.read_text())["mark"]
        assert len(journal.marked(mark)) == 3  # sh and both sleeps
        pids = sorted(journal.marked(mark))
        action = json.loads(token.read_text())
        found = journal.undo(action)
        assert sh.wait(5) == -signal.SIGKILL
        assert journal.marked(mark) == []
        assert found == {"killed": pids} and "killed" not in action  # the action is left alone
        assert describe({**action, **found}) == (  # what `iowall recover` names
            f"killed sh and all it forked (pid {', '.join(map(str, pids))})"
        )
    finally:
        journal.done(token)
        if sh.poll() is None:
            sh.kill()
            sh.wait()


@needs_root
def test_a_loop_journaled_before_losetup_named_it_is_detached(state: Path, tmp_path: Path) -> None:
    """A kill between the kernel attaching a loop and iowall learning its name: the entry
    holds only the image and offset, and recovery finds the device by its backing file
    (also once the image is unlinked); a loop at another offset of the image stays."""
    image = tmp_path / "iowall-crash.img"
    with image.open("wb") as f:
        f.truncate(8 << 20)
    ours, other = (
        subprocess.run(
            ["losetup", "--find", "--show", *extra, str(image)], capture_output=True, text=True, check=True
        ).stdout.strip()
        for extra in ([], ["--offset", str(4 << 20)])
    )
    try:
        dead = subprocess.Popen(["true"])
        dead.wait()
        state.mkdir(parents=True)
        (state / f"{time.time_ns():020d}-{dead.pid}-000000.json").write_text(
            json.dumps(
                {
                    "pid": dead.pid,
                    "pid_start": -2,
                    "boot": journal.boot_id(),
                    "undo": "losetup",
                    "backing": str(image),
                    "offset": 0,
                }
            )
        )
        image.unlink()
        undone = journal.recover()
        assert not Path(f"/sys/block/{Path(ours).name}/loop").exists()
        assert Path(f"/sys/block/{Path(other).name}/loop/backing_file").exists()
        (said,) = [describe(a) for a in undone]
        assert said == f"detached {ours} ({image})"
    finally:
        for dev in (ours, other):
            subprocess.run(["losetup", "-d", dev], capture_output=True)


@needs_root
def test_a_scratch_directory_of_a_killed_process_is_removed(state: Path, tmp_path: Path) -> None:
    """fio's scratch directory (job file, JSON, logs) was a TemporaryDirectory: every SIGKILL
    mid-run left one in /tmp (105 of them here after two days of crash trials). Journaled
    before it exists, the next recover (which finds another state directory's journal
    through the machine-wide index, as root) removes it; one used to its end leaves nothing."""
    code = (
        "import sys, time\n"
        "from iowall.machine.journal import scratch_dir\n"
        "with scratch_dir('iowall-fio-') as d:\n"
        "    open(d + '/job.fio', 'w').write('x')\n"
        "    print(d, flush=True)\n"
        "    time.sleep(60)\n"
    )
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "theirs")}
    child = subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None
    path = Path(child.stdout.readline().strip())
    child.send_signal(signal.SIGKILL)
    child.wait()
    assert (path / "job.fio").exists() and path.name.startswith("iowall-fio-")
    journal.recover()
    assert not path.exists()
    with journal.scratch_dir("iowall-fio-") as d:
        Path(d, "out.json").write_text("{}")
    assert not Path(d).exists() and not list(state.glob("*.json"))
