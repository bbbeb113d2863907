"""A run's CPU profile as a flame graph, or two runs' differential one: `plot flame`, the
dashboard's flame page, the flame graphs `gate --flames` and `ab` write."""

from __future__ import annotations

from ..analysis.explain.kernel_paths import attribute, decode_folded
from ..model import PROFILE_ARTIFACT
from ..report.flame import diff_flamegraph, flamegraph, subtitle
from ..store import Store
from ..vocab.errors import UserError
from .selection import run_id


def load_profile(store: Store, arg: str) -> tuple[int, str, dict[str, int]]:
    """Run id, a short description and the folded stacks of one run, or a UserError."""
    rid = run_id(arg)
    if rid is None:
        raise UserError(f"{arg!r} is not a run id: give run ids (see `iowall runs`)")
    run = store.get_run(rid)
    art = next((a for a in run.artifacts if a.name == PROFILE_ARTIFACT), None)
    if art is None:
        raise UserError(
            f"run {rid} has no profile data: record it with the profile probe "
            "(--probes default, where perf is installed)"
        )
    stacks = decode_folded(art.body)
    if not stacks:
        raise UserError(f"run {rid}: its profile holds no samples")
    what = " ".join(x for x in (run.point.recipe, run.point.describe(), run.label) if x)
    return rid, what, stacks


def flame_svg(store: Store, runs: list[str]) -> str:
    """The SVG of one run's flame graph, or of two runs' differential one (base, new)."""
    profiles = [load_profile(store, r) for r in runs]
    if len(profiles) == 1:
        rid, what, stacks = profiles[0]
        return flamegraph(stacks, f"run {rid}: {what}", subtitle(attribute(stacks)))
    (ra, wa, a), (rb, wb, b) = profiles
    title = f"run {ra} -> run {rb}: red more in {rb}, blue less (normalised)"
    sub = f"base {wa} ({subtitle(attribute(a), 3)}); new {wb} ({subtitle(attribute(b), 3)})"
    return diff_flamegraph(a, b, title, sub)
