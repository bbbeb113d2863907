"""`git bisect` in a kernel tree, for `iowall bisect --git DIR --build CMD`: start it, check
commits out, run the user's build command (iowall never builds by itself: the command's
last line of output is the image it built), tell git good, bad or skip, and read what git
says back (the next commit, the first bad commit, or the range skips left)."""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass

from ..vocab.errors import UserError

_SHA = re.compile(r"^([0-9a-f]{40}) is the first bad commit", re.MULTILINE)
_ROUGHLY = re.compile(r"\(roughly (\d+) steps?\)")
#: Set for the build command: the commit it builds.
COMMIT_ENV = "IOWALL_BISECT_COMMIT"


def git(tree: str, *args: str, check: bool = True) -> str:
    """``git -C tree ARGS``'s output (stdout then stderr); a UserError with git's last line
    when it fails and ``check``."""
    p = subprocess.run(["git", "-C", tree, *args], capture_output=True, text=True, check=False)
    if check and p.returncode != 0:
        last = (p.stderr.strip().splitlines() or [f"exit {p.returncode}"])[-1]
        raise UserError(f"git {' '.join(args)} in {tree}: {last}")
    return p.stdout + p.stderr


def check_tree(tree: str) -> str:
    """The work tree's top directory; a UserError when ``tree`` is not a git work tree or a
    bisection is already in progress there (iowall would end it with its reset)."""
    if not os.path.isdir(tree):
        raise UserError(f"--git {tree}: no such directory")
    p = subprocess.run(
        ["git", "-C", tree, "rev-parse", "--show-toplevel"], capture_output=True, text=True, check=False
    )
    if p.returncode != 0:
        raise UserError(f"--git {tree}: not a git work tree")
    top = p.stdout.strip()
    if subprocess.run(["git", "-C", top, "bisect", "log"], capture_output=True, check=False).returncode == 0:
        raise UserError(f"--git {top}: a git bisect is in progress there: end it first (git bisect reset)")
    return top


def commit_of(tree: str, rev: str, what: str) -> str:
    """The full id of commit ``rev``; a UserError naming the option when there is none."""
    p = subprocess.run(
        ["git", "-C", tree, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"],
        capture_output=True,
        text=True,
        check=False,
    )
    if p.returncode != 0:
        raise UserError(f"{what} {rev!r}: no such commit in {tree}")
    return p.stdout.strip()


def is_ancestor(tree: str, a: str, b: str) -> bool:
    """Whether commit ``a`` is an ancestor of ``b``."""
    cmd = ["git", "-C", tree, "merge-base", "--is-ancestor", a, b]
    return subprocess.run(cmd, capture_output=True, check=False).returncode == 0


def short(tree: str, sha: str) -> str:
    return git(tree, "rev-parse", "--short=12", sha).strip()


@dataclass(frozen=True)
class GitSays:
    """What git said after a mark: the commit it checked out to test next, or the first bad
    commit, or the commits skips left (any of them may be the first bad)."""

    next: str | None = None
    first_bad: str | None = None
    range: tuple[str, ...] = ()
    roughly: int | None = None  # git's "roughly N steps" after this one

    @property
    def done(self) -> bool:
        return self.first_bad is not None or bool(self.range)


def parse(tree: str, out: str) -> GitSays:
    """Read git bisect's words: ``X is the first bad commit``, ``The first bad commit could be
    any of:`` then ids, or ``Bisecting: … (roughly N steps)`` (HEAD is the next)."""
    m = _SHA.search(out)
    if m:
        return GitSays(first_bad=m.group(1))
    if "could be any of" in out:
        after = out.split("could be any of:", 1)[1]
        return GitSays(range=tuple(re.findall(r"^([0-9a-f]{40})\s*$", after, re.MULTILINE)))
    if "Bisecting:" in out:
        r = _ROUGHLY.search(out)
        return GitSays(next=git(tree, "rev-parse", "HEAD").strip(), roughly=int(r.group(1)) if r else None)
    raise UserError(f"git bisect in {tree} said what iowall cannot read: {out.strip()[-200:]}")


def begin(tree: str) -> None:
    """``git bisect start`` with no commit yet: git keeps the branch the tree is on, which
    ``reset`` returns to, whatever iowall checks out before telling git the ends."""
    git(tree, "bisect", "start")


def mark(tree: str, word: str, rev: str | None = None) -> GitSays:
    """``git bisect good|bad|skip`` of ``rev`` (HEAD when None), and what git says next (git
    exits non-zero when only skipped commits are left: that is read, not raised)."""
    return parse(tree, git(tree, "bisect", word, *([rev] if rev else []), check=False))


def reset(tree: str) -> None:
    """``git bisect reset``: the tree back on the branch it was on."""
    git(tree, "bisect", "reset", check=False)


def build(tree: str, cmd: str, sha: str) -> tuple[str | None, str]:
    """Check ``sha`` out and run ``cmd`` (a shell command) in ``tree``: the image its last
    line of output names (relative to ``tree``), or None and why (the command failed, or
    its last line is not a file)."""
    git(tree, "checkout", "-q", sha)
    env = {**os.environ, COMMIT_ENV: sha}
    p = subprocess.run(cmd, shell=True, cwd=tree, capture_output=True, text=True, env=env, check=False)
    if p.returncode != 0:
        said = (p.stderr.strip().splitlines() or p.stdout.strip().splitlines() or [""])[-1]
        return None, f"the build exited {p.returncode}" + (f": {said}" if said else "")
    lines = [x.strip() for x in p.stdout.splitlines() if x.strip()]
    if not lines:
        return None, "the build printed nothing: its last line must be the image it built"
    image = os.path.join(tree, lines[-1])
    if not os.path.isfile(image):
        return None, f"the build's last line {lines[-1]!r} is not a file"
    return os.path.abspath(image), ""
