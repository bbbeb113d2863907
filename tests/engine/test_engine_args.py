"""Bad arguments: one line on stderr, nothing on stdout, exit status 2."""

from __future__ import annotations

import subprocess

import pytest

BAD = [
    [],
    ["frobnicate"],
    ["memcopy"],
    ["memcopy", "--threads", "0", "--bytes", "1M"],
    ["memcopy", "--threads", "1", "--bytes", "1X"],
    ["memcopy", "--threads", "1", "--bytes", "1M", "--method", "avx"],
    ["memcopy", "--threads", "1", "--bytes", "1M", "--bogus"],
    ["memcopy", "--threads", "1", "--bytes"],
    ["memcopy", "--threads", "1", "--bytes", "1M", "extra"],
    ["meta", "--dir", "/tmp/x", "--threads", "1", "--files-per-thread", "1"],
    ["meta", "--dir", "/tmp/x", "--threads", "1", "--files-per-thread", "1", "--phases", "mkdir"],
    ["meta", "--dir", "/tmp/x", "--threads", "1", "--files-per-thread", "1", "--phases", ","],
    ["meta", "--dir", "/tmp/x", "--threads", "1", "--files-per-thread", "-5", "--phases", "walk"],
    [
        "meta",
        "--dir",
        "/tmp/x",
        "--threads",
        "1",
        "--files-per-thread",
        "1",
        "--phases",
        "walk",
        "--shared-dir",
        "--dirs-per-thread",
        "2",
    ],
    [
        "meta",
        "--dir",
        "/tmp/x",
        "--threads",
        "1",
        "--files-per-thread",
        "1",
        "--phases",
        "chmod",
        "--chmod-mode",
        "rw",
    ],
    ["smallfiles", "--dir", "/tmp/x", "--threads", "1"],
    ["smallfiles", "--dir", "/tmp/x", "--threads", "1", "--seconds", "-1"],
    ["smallfiles", "--dir", "/tmp/x", "--threads", "1", "--files", "10", "--fsync", "always"],
]


@pytest.mark.parametrize("args", BAD, ids=lambda a: " ".join(a) or "(none)")
def test_bad_arguments_exit_2(run, args: list[str]) -> None:
    r = run(*args)
    assert r.rc == 2
    assert r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("iowall-engine")


def test_help_and_version(engine: str, run) -> None:
    cp = subprocess.run([engine, "--help"], capture_output=True, text=True)
    assert cp.returncode == 0 and "memcopy" in cp.stdout and "smallfiles" in cp.stdout
    r = run("version")
    assert r.rc == 0 and r.records[0]["engine"] == "iowall-engine"
