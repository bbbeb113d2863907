"""`iowall plot flame RUN [NEW_RUN] -o F.svg`: a run's CPU profile as an interactive flame
graph, or a differential one of two runs (base, new)."""

from __future__ import annotations

import os
from typing import Annotated

import typer

from ..analysis.paths import attribute, decode_folded
from ..errors import UserError
from ..probes.profile import ARTIFACT
from ..report.emit import wrote
from ..report.flame import diff_flamegraph, flamegraph, subtitle, write_svg
from ..selection import run_id
from ..store import Store
from .options import DbOpt


def load_profile(store: Store, arg: str) -> tuple[int, str, dict[str, int]]:
    """Run id, a short description and the folded stacks of one run, or a UserError."""
    rid = run_id(arg)
    if rid is None:
        raise UserError(f"{arg!r} is not a run id: give run ids (see `iowall runs`)")
    run = store.get_run(rid)
    art = next((a for a in run.artifacts if a.name == ARTIFACT), None)
    if art is None:
        raise UserError(f"run {rid} has no profile data: record it with the profile probe "
                        "(--probes default, where perf is installed)")
    stacks = decode_folded(art.body)
    if not stacks:
        raise UserError(f"run {rid}: its profile holds no samples")
    what = " ".join(x for x in (run.point.recipe, run.point.describe(), run.label) if x)
    return rid, what, stacks


def plot_flame(
    runs: Annotated[list[str], typer.Argument(
        metavar="RUN [NEW_RUN]", help="one run: its flame graph; two: base and new, coloured "
        "by the difference", show_default=False)],
    output: Annotated[str, typer.Option(
        "-o", "--output", metavar="FILE.svg", help="the SVG to write", show_default=False)],
    db: DbOpt = None,
) -> None:
    """A CPU flame graph of a run (perf at 99 Hz, kernel frames orange), or of two runs with
    the difference coloured: red grew, blue shrank, both profiles normalised."""
    if len(runs) not in (1, 2):
        raise UserError(f"give one run or two (base new), not {len(runs)}")
    if os.path.splitext(output)[1].lower() != ".svg":
        raise UserError(f"{output}: a flame graph is an SVG: name the file .svg")
    write_svg(flame_svg(Store.existing(db), runs), output)
    wrote(output)


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
