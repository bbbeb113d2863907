"""compare by invocation: rows whose runs came in invocations of several runs are judged with
the invocation as the unit that can differ (analysis.regress.invocations)."""

from __future__ import annotations

import dataclasses
import html
import math
import random

from iowall.analysis.regress.compare import Side, compare
from iowall.analysis.regress.invocations import by_invocation, clustered
from iowall.analysis.regress.stats import compare_samples
from iowall.report.compare import render_csv, render_html, render_json, render_md, render_text
from iowall.web.pages import compare_context

from .compare_data import runs


def _side(rng: random.Random, k: int, m: int, between: float, within: float, level: float = 1000.0):
    """``k`` invocations of ``m`` runs: each invocation's offset and each run's noise on logs."""
    values, batches = [], []
    for i in range(k):
        off = rng.gauss(0.0, between)
        for _ in range(m):
            values.append(level * math.exp(off + rng.gauss(0.0, within)))
            batches.append(f"inv{i}")
    return values, batches


def test_which_rows_are_judged_by_invocation() -> None:
    v = [1.0, 1.1, 1.2, 1.3]
    assert clustered(v, v, ["a", "a", "b", "b"], ["c", "c", "d", "d"])
    assert clustered(v, v, ["a"] * 4, ["c", "c", "d", "d"])  # the other side's spread applies
    assert not clustered(v, v, ["a"] * 4, ["c"] * 4)  # one a side: the spread cannot be seen
    assert not clustered(v, v, list("abcd"), list("efgh"))  # every run its own invocation
    assert not clustered(v, v, ["", "", "b", "b"], ["c", "c", "d", "d"])  # a batch not known
    assert not clustered([0.0, *v[1:]], v, ["a", "a", "b", "b"], ["c", "c", "d", "d"])  # a zero: no log


def test_like_sets_whose_invocations_differ_are_not_marked() -> None:
    """Two invocations of five runs a side, whole invocations 4% apart and runs 1%: the runs
    taken as independent mark most such A/As; by invocation about the test's level."""
    rng = random.Random(7)
    by_run = by_inv = 0
    for _ in range(200):
        b, bb = _side(rng, 2, 5, 0.04, 0.01)
        n, nb = _side(rng, 2, 5, 0.04, 0.01)
        by_run += compare_samples(b, n, direction="higher").significant
        by_inv += by_invocation(b, n, bb, nb, direction="higher").significant
    assert by_run >= 60 and by_inv <= 14, (by_run, by_inv)


def test_a_real_change_across_invocations_is_still_marked() -> None:
    rng = random.Random(3)
    b, bb = _side(rng, 3, 5, 0.02, 0.01)
    n, nb = _side(rng, 3, 5, 0.02, 0.01, level=800.0)
    c = by_invocation(b, n, bb, nb, direction="higher")
    assert c.significant and c.better is False and c.invocations == (3, 3)
    assert c.ci_low < c.ratio < c.ci_high < 1.0 and 0.7 < c.ratio < 0.9
    assert (c.n_base, c.n_new) == (15, 15)
    lat = by_invocation(b, n, bb, nb, direction="lower")  # lower is better: the fall is better
    assert lat.significant and lat.better is True


def test_one_new_invocation_is_judged_against_the_base_invocations_spread() -> None:
    """A gate's shape: the baseline holds invocations, the new side one. A new invocation within
    the baseline's invocations' spread is not marked although its runs sit tight."""
    base = [100.0, 101, 100, 110.0, 111, 110, 95.0, 96, 95]
    bb = ["a"] * 3 + ["b"] * 3 + ["c"] * 3
    new, nb = [104.0, 104.5, 104.2], ["d"] * 3
    assert compare_samples(base, new, direction="higher").ci_low < 1.0  # the runs do not mark it either
    c = by_invocation(base, new, bb, nb, direction="higher")
    assert not c.significant and c.invocations == (3, 1)
    assert c.ci_low < 0.95 and c.ci_high > 1.05  # as wide as the invocations' spread


def test_compare_judges_clustered_rows_by_invocation_and_says_so() -> None:
    def batched(rs: list, name: str) -> list:  # five runs: invocations of 3 and 2
        return [dataclasses.replace(r, batch=f"{name}{r.repeat_index // 3}") for r in rs]

    base = batched(runs("a"), "a")
    new = batched(runs("b", scale={"0": 0.8, "1": 0.8}, start_id=50, seed=2), "b")
    res = compare(Side("a", base), [Side("b", new)])
    assert res.rows and all(r.cmp.invocations == (2, 2) for r in res.rows)
    (said,) = [n for n in res.notes if "judged by invocation" in n]
    assert "with 4 invocations in all the spread of invocations rests on 2 degrees of freedom" in said
    text = render_text(res)
    assert "2:2 inv" in text and max(len(line) for line in text.splitlines()) <= 80
    assert "5:5 in 2:2" in render_md(res)
    # each form's legend names the n its cells show: the text's invocations, the others' runs
    assert "'2:2 inv'" in text and "'10:10 in 2:2'" not in text
    for other in (render_md(res), html.unescape(render_html(res))):
        assert "5:5 in 2:2" in other and "'10:10 in 2:2'" in other and "'2:2 inv'" not in other
    assert "by invocation" in render_json(res)["method"]
    assert all(row["invocations"] == [2, 2] for row in render_json(res)["rows"])
    header, *lines = render_csv(res).splitlines()
    assert header.endswith(",inv_base,inv_new") and all(ln.endswith(",2,2") for ln in lines)
    assert all(row["n"] == "5:5 in 2:2" for row in compare_context(res)["rows"])  # the dashboard's
    # the gate's rows stay by run: the gate tests invocations by its own rule
    gate_rows = compare(Side("a", base), [Side("b", new)], by_invocation=False).rows
    assert all(r.cmp.invocations is None for r in gate_rows)
    # runs of unknown batches: by run, as before
    plain = compare(Side("a", runs("a")), [Side("b", runs("b", start_id=50, seed=2))])
    assert all(r.cmp.invocations is None for r in plain.rows)
    assert all(row["invocations"] is None for row in render_json(plain)["rows"])
    assert all(ln.endswith(",,") for ln in render_csv(plain).splitlines()[1:])
    assert "by invocation" not in render_json(plain)["method"]
