"""Exceptions with a meaning for both faces: a UserError ends in one clear line and exit code 2
on the CLI and a 400 on the dashboard; a NotFound (a UserError) is a 404 there."""

from __future__ import annotations


class IowallError(Exception):
    """Base class of iowall's own errors."""


class UserError(IowallError):
    """Something the user can fix (bad input, missing tool, not root); the CLI exits 2."""


class NotFound(UserError):
    """What the user named is not there (a run, a report, a label): the CLI exits 2 as for
    any UserError, the dashboard answers 404 (not by the message's wording)."""


class EngineError(IowallError):
    """iowall-engine failed or printed something that is not its JSON."""


class WorkloadError(IowallError):
    """A workload (fio, engine) failed during a run; the run is stored as failed."""


class StoreFailed(IowallError):
    """The store could not keep a measured run (a full disk, a server gone, a lock held too
    long): the job stops, the run waits in the spool for the store (``bundle.spool``); the
    CLI exits 4."""


class Interrupted(IowallError):
    """SIGINT or SIGTERM arrived; everything is torn down and the run stored as interrupted."""

    def __init__(self, signame: str) -> None:
        super().__init__(f"interrupted by {signame}")
        self.signame = signame


class PlanError(UserError):
    """A mistake in a plan or a fio job file: where (file, line, key) and what."""

    def __init__(self, where: str, line: int | None, key: str, message: str) -> None:
        self.where, self.line, self.key, self.problem = where, line, key, message
        head = f"{where}:{line}" if line else where
        super().__init__(f"{head}: key {key}: {message}" if key else f"{head}: {message}")
