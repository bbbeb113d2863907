"""Plans: parsing, axes expansion, interleaving, --set, job files, and errors that name the
file, the line and the key."""

from __future__ import annotations

import textwrap
from collections import Counter
from pathlib import Path

import pytest

from iowall.plan import (
    Plan,
    PlanError,
    Workload,
    interleave,
    key_line,
    load_plan,
    memory_need,
    parse_set,
    plan_from_doc,
)
from iowall.vocab.errors import UserError
from iowall.workloads.jobfile import retarget_jobfile

ROOT = Path(__file__).resolve().parents[2]

BASE = """\
label = "t"
repeat = 2
[workload]
kind = "fio"
rw = "write"
bs = "1M"
size = "64M"
[bed]
kind = "ram"
fs = "xfs"
"""


def write(tmp_path: Path, text: str, name: str = "p.toml") -> Path:
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return p


def plan_error(tmp_path: Path, text: str) -> PlanError:
    p = write(tmp_path, text)
    with pytest.raises(PlanError) as ei:
        load_plan(p)
    assert str(p) in str(ei.value)
    return ei.value


# ------------------------------------------------------------------------------------------
# parsing and expansion


def test_example_parses_as_documented() -> None:
    plan = load_plan(ROOT / "examples" / "dirty-ratio.toml")
    assert plan.label == "dirty-ratio" and plan.repeat == 3 and plan.recipe == "plan:dirty-ratio"
    assert plan.workload.params == {"rw": "write", "bs": "1M", "size": "256M", "direct": 0}
    assert plan.bed.kind == "ram" and plan.bed.fs == "xfs" and plan.bed.size is None
    assert [(a.name, a.values) for a in plan.axes] == [("jobs", (1, 2)), ("sysctl:vm.dirty_ratio", (5, 10))]
    pts = plan.expand()
    assert [p.title() for p in pts] == [
        "jobs=1 sysctl:vm.dirty_ratio=5",
        "jobs=1 sysctl:vm.dirty_ratio=10",
        "jobs=2 sysctl:vm.dirty_ratio=5",
        "jobs=2 sysctl:vm.dirty_ratio=10",
    ]
    p0 = pts[0]
    assert p0.point.recipe == "plan:dirty-ratio"
    assert dict(p0.point.params) == {
        "kind": "fio",
        "rw": "write",
        "bs": "1M",
        "size": "256M",
        "direct": 0,
        "jobs": 1,
        "sysctl:vm.dirty_ratio": 5,
    }
    assert p0.fio == {"rw": "write", "bs": "1M", "size": "256M", "direct": 0, "jobs": 1}
    assert [(str(k), v) for k, v in p0.knobs] == [("sysctl:vm.dirty_ratio", 5)]
    assert len({p.point.key() for p in pts}) == 4


def test_set_on_the_command_line_equals_the_axes_table(tmp_path: Path) -> None:
    no_axes = load_plan(write(tmp_path, BASE))
    sets = [parse_set("jobs=1,2"), parse_set("sysctl:vm.dirty_ratio=5,10")]
    a = no_axes.with_overrides(sets=sets)
    b = load_plan(
        write(tmp_path, BASE + '[axes]\njobs = [1, 2]\n"sysctl:vm.dirty_ratio" = [5, 10]\n', "b.toml")
    )
    assert [p.point.params for p in a.expand()] == [p.point.params for p in b.expand()]


def test_set_replaces_an_axis_in_place_and_label_keeps_the_recipe(tmp_path: Path) -> None:
    plan = load_plan(write(tmp_path, BASE + '[axes]\njobs = [1, 2]\nbs = ["4k", "1M"]\n'))
    p2 = plan.with_overrides(sets=[parse_set("jobs=4")], label="patched", repeat=5)
    assert [a.name for a in p2.axes] == ["jobs", "bs"]
    assert p2.axis("jobs") is not None and p2.axis("jobs").values == (4,)
    assert p2.label == "patched" and p2.recipe == "plan:t" and p2.repeat == 5
    assert plan.with_overrides(quick=True).repeat == 1
    assert plan.with_overrides(quick=True, repeat=2).repeat == 2
    assert plan.with_overrides(bed="tmpfs").bed.kind == "tmpfs"


def test_fixed_params_numjobs_flags_and_options(tmp_path: Path) -> None:
    plan = load_plan(
        write(
            tmp_path,
            """\
        [workload]
        rw = "randrw"
        rwmixwrite = 30
        bs = 4096
        size = "32M"
        numjobs = 3
        direct = true
        time_based = 1
        runtime = "5s"
        [workload.options]
        buffer_compress_percentage = 50
        refill_buffers = true
        """,
        )
    )
    assert plan.label == "p"  # the file's stem
    assert plan.workload.params == {
        "rw": "randrw",
        "rwmixwrite": 30,
        "bs": 4096,
        "size": "32M",
        "jobs": 3,
        "direct": 1,
        "time_based": 1,
        "runtime": "5s",
    }
    pp = plan.expand()[0]
    job = plan.job(pp, "/mnt/x").render()  # type: ignore[union-attr]
    assert "directory=/mnt/x" in job and "numjobs=3" in job and "group_reporting=1" in job
    assert "direct=1" in job and "rwmixwrite=30" in job and "refill_buffers=1" in job
    assert "buffer_compress_percentage=50" in job and "[plan]" in job
    assert pp.point.params["options"] == {"buffer_compress_percentage": 50, "refill_buffers": True}


def test_bed_axes_are_outermost_and_shape_the_bed(tmp_path: Path) -> None:
    plan = load_plan(
        write(
            tmp_path,
            BASE.replace('fs = "xfs"', 'fs = "xfs"\nmount_opts = "noatime"\nmkfs_opts = "-K"')
            + """\
        [axes]
        jobs = [1, 2]
        fs = ["xfs", "ext4"]
        mount = ["lazytime", "nodiscard"]
        mkfs = ["-b size=4096"]
        bed_size = ["2G"]
        """,
        )
    )
    pts = plan.expand()
    assert len(pts) == 8
    # bed axes vary slowest, in the order written; jobs fastest
    assert [(p.values["fs"], p.values["mount"], p.values["jobs"]) for p in pts[:4]] == [
        ("xfs", "lazytime", 1),
        ("xfs", "lazytime", 2),
        ("xfs", "nodiscard", 1),
        ("xfs", "nodiscard", 2),
    ]
    s = pts[0].shape
    assert (s.fs, s.mount_opts, s.mkfs_opts, s.size) == (
        "xfs",
        "noatime,lazytime",
        "-K -b size=4096",
        2 << 30,
    )
    assert pts[4].shape.fs == "ext4"
    assert pts[0].knobs == ()
    assert len({p.shape for p in pts}) == 4


def test_fs_block_axis_makes_one_xfs_bed_per_block_size(tmp_path: Path) -> None:
    plan = load_plan(write(tmp_path, BASE + '[axes]\nfs_block = ["4k", "16k", 65536]\n'))
    pts = plan.expand()
    assert [p.shape.fs_block for p in pts] == [4096, 16384, 65536]
    assert [p.point.params["fs_block"] for p in pts] == ["4k", "16k", "64k"]
    assert pts[1].shape.mkfs_argv == "-b size=16384"
    assert "16k blocks" in pts[1].shape.describe()
    for bad in ('"3k"', '"128k"', "true"):
        e = plan_error(tmp_path, BASE + f"[axes]\nfs_block = [{bad}]\n")
        assert "XFS block size" in str(e)


def test_knob_axes_and_value_types(tmp_path: Path) -> None:
    plan = load_plan(
        write(
            tmp_path,
            BASE
            + """\
        [axes]
        "sysfs:queue/max_sectors_kb" = [64, 128]
        "sysfs:queue/scheduler" = ["none", "mq-deadline"]
        "xfs:extsize" = ["64k"]
        "sysfs:/sys/kernel/mm/transparent_hugepage/enabled" = ["never"]
        """,
        )
    )
    pp = plan.expand()[0]
    assert [str(k) for k, _ in pp.knobs] == [
        "sysfs:queue/max_sectors_kb",
        "sysfs:queue/scheduler",
        "xfs:extsize",
        "sysfs:/sys/kernel/mm/transparent_hugepage/enabled",
    ]
    assert [k.needs_bed for k, _ in pp.knobs] == [True, True, True, False]


# ------------------------------------------------------------------------------------------
# interleaving


def test_interleave_rounds_a_b_a_b(tmp_path: Path) -> None:
    pts = load_plan(ROOT / "examples" / "dirty-ratio.toml").expand()
    assert interleave(pts, 3) == [(r, i) for r in range(3) for i in range(4)]


def test_interleave_groups_bed_shapes_and_shuffles_with_seed(tmp_path: Path) -> None:
    plan = load_plan(write(tmp_path, BASE + '[axes]\nfs = ["xfs", "ext4", "btrfs"]\njobs = [1, 2, 3, 4]\n'))
    pts = plan.expand()
    order = interleave(pts, 4, seed=7)
    assert order == interleave(pts, 4, seed=7)  # the recorded seed reproduces it
    assert order != interleave(pts, 4, seed=8)
    for r in range(4):
        rnd = [i for rr, i in order if rr == r]
        assert sorted(rnd) == list(range(12))  # every point once per round
        shapes = [pts[i].shape for i in rnd]
        # each bed shape is one contiguous block: one provisioning per shape per round
        changes = sum(1 for a, b in zip(shapes, shapes[1:], strict=False) if a != b)
        assert changes == 2
    assert [rr for rr, _ in order] == sorted(rr for rr, _ in order)  # rounds never overlap
    firsts = Counter(tuple(i for rr, i in order if rr == r) for r in range(4))
    assert len(firsts) > 1  # shuffled differently per round


def test_plan_shuffle_key(tmp_path: Path) -> None:
    assert load_plan(write(tmp_path, "shuffle = 42\n" + BASE)).shuffle == 42
    seeded = load_plan(write(tmp_path, "shuffle = true\n" + BASE)).shuffle
    assert isinstance(seeded, int)
    assert load_plan(write(tmp_path, BASE)).shuffle is None


# ------------------------------------------------------------------------------------------
# errors: one PlanError naming file, line and key


def test_unknown_top_level_key(tmp_path: Path) -> None:
    e = plan_error(tmp_path, 'lable = "x"\n' + BASE)
    assert e.line == 1 and e.key == "lable"
    assert "did you mean 'label'" in str(e) and ":1: key lable: unknown key" in str(e)


def test_unknown_workload_key(tmp_path: Path) -> None:
    e = plan_error(tmp_path, BASE.replace('bs = "1M"', 'bz = "1M"'))
    assert (e.line, e.key) == (6, "workload.bz")
    assert "did you mean 'bs'" in str(e)


def test_unknown_bed_key(tmp_path: Path) -> None:
    e = plan_error(tmp_path, BASE + 'sise = "2G"\n')
    assert (e.line, e.key) == (11, "bed.sise")


def test_wrong_types(tmp_path: Path) -> None:
    e = plan_error(tmp_path, BASE.replace("repeat = 2", 'repeat = "three"'))
    assert (e.line, e.key) == (2, "repeat") and "whole number" in e.problem
    e = plan_error(tmp_path, BASE.replace('size = "64M"', "size = true"))
    assert (e.line, e.key) == (7, "workload.size") and "size" in e.problem
    e = plan_error(tmp_path, BASE.replace('size = "64M"', 'size = "lots"'))
    assert (e.line, e.key) == (7, "workload.size") and "'lots'" in e.problem
    e = plan_error(tmp_path, BASE + "[axes]\ndirect = [0, 2]\n")
    assert (e.line, e.key) == (12, "axes.direct") and "0 or 1" in e.problem
    e = plan_error(tmp_path, BASE + '[axes]\njobs = [1, "two"]\n')
    assert (e.line, e.key) == (12, "axes.jobs") and "'two'" in e.problem
    e = plan_error(tmp_path, BASE.replace("repeat = 2", "repeat = 0"))
    assert e.key == "repeat" and "at least 1" in e.problem
    e = plan_error(tmp_path, BASE.replace('rw = "write"', 'rw = "writes"'))
    assert e.key == "workload.rw" and "'writes'" in e.problem


def test_empty_axis(tmp_path: Path) -> None:
    e = plan_error(tmp_path, BASE + "\n[axes]\njobs = []\n")
    assert (e.line, e.key) == (13, "axes.jobs") and "empty axis" in e.problem


def test_unknown_knob_and_unknown_axis(tmp_path: Path) -> None:
    e = plan_error(tmp_path, BASE + '[axes]\n"sysctl:vm.dirty_ratoi" = [5]\n')
    assert (e.line, e.key) == (12, 'axes."sysctl:vm.dirty_ratoi"')
    assert "unknown knob sysctl:vm.dirty_ratoi" in e.problem
    e = plan_error(tmp_path, BASE + '[axes]\n"sysfss:queue/nr_requests" = [5]\n')
    assert e.line == 12 and "unknown axis" in e.problem
    e = plan_error(tmp_path, BASE + '[axes]\n"xfs:extsz" = ["4k"]\n')
    assert e.line == 12 and "xfs:extsize" in e.problem
    e = plan_error(tmp_path, BASE + '[axes]\n"sysfs:/etc/passwd" = ["x"]\n')
    assert e.line == 12 and "/sys/" in e.problem
    e = plan_error(tmp_path, BASE + "[axes]\njbos = [1]\n")
    assert e.line == 12 and "did you mean 'jobs'" in e.problem
    e = plan_error(tmp_path, BASE + '[axes]\nfs = ["zfs"]\n')
    assert e.line == 12 and "unknown filesystem" in e.problem


def test_unknown_workload_kind(tmp_path: Path) -> None:
    e = plan_error(tmp_path, BASE.replace('kind = "fio"', 'kind = "meta"'))
    assert (e.line, e.key) == (4, "workload.kind") and "unknown workload kind 'meta'" in str(e)


def test_structural_mistakes(tmp_path: Path) -> None:
    e = plan_error(tmp_path, 'label = "x"\n')
    assert e.key == "workload" and "missing" in e.problem
    e = plan_error(tmp_path, BASE.replace('size = "64M"', ""))
    assert e.key == "workload" and e.line == 3 and "size" in e.problem
    e = plan_error(tmp_path, BASE.replace('size = "64M"', 'size = "64M"\njobs = 1\nnumjobs = 2'))
    assert e.key == "workload.numjobs" and e.line == 9
    e = plan_error(tmp_path, BASE.replace('kind = "ram"', 'kind = "nvme"'))
    assert (e.line, e.key) == (9, "bed.kind") and "unknown bed" in e.problem
    e = plan_error(tmp_path, BASE + "[axes]\njobs = [1, 1]\n")
    assert e.key == "axes.jobs" and "twice" in e.problem
    e = plan_error(tmp_path, 'probes = ["cpu", "nosuch"]\n' + BASE)
    assert (e.line, e.key) == (1, "probes") and "unknown probe" in e.problem


def test_invalid_toml_names_the_line(tmp_path: Path) -> None:
    e = plan_error(tmp_path, BASE + "[axes\njobs = [1]\n")
    assert e.line == 11 and "not valid TOML" in str(e)


def test_dotted_keys_and_inline_tables_are_located(tmp_path: Path) -> None:
    e = plan_error(
        tmp_path, 'label = "x"\nworkload.kind = "fio"\nworkload.size = "1M"\nworkload.iodepth = 0\n'
    )
    assert (e.line, e.key) == (4, "workload.iodepth")


def test_jobfile_errors(tmp_path: Path) -> None:
    (tmp_path / "dev.fio").write_text("[global]\nrw=write\n[j]\nfilename=/dev/sda\n")
    p = write(tmp_path, '[workload]\njobfile = "dev.fio"\n')
    with pytest.raises(PlanError) as ei:
        load_plan(p)
    assert "dev.fio:4" in str(ei.value) and "device" in str(ei.value)
    e = plan_error(tmp_path, '[workload]\njobfile = "missing.fio"\n')
    assert (e.line, e.key) == (2, "workload.jobfile")


def test_missing_plan_file(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="not found"):
        load_plan(tmp_path / "nope.toml")


def test_key_line() -> None:
    text = 'a = 1\n[axes]\n# "jobs" = [9]\njobs = [1,\n  2]\n"sysctl:vm.x" = [1]\n[bed]\nfs="x"\n'
    assert key_line(text, ("a",)) == 1
    assert key_line(text, ("axes", "jobs")) == 4
    assert key_line(text, ("axes", "sysctl:vm.x", 0)) == 6
    assert key_line(text, ("bed", "fs")) == 8
    assert key_line(text, ("bed", "size")) == 7  # the enclosing table
    assert key_line(text, ("nothing",)) is None


# ------------------------------------------------------------------------------------------
# --set


def test_parse_set() -> None:
    assert parse_set("jobs=1,2,4") == ("jobs", [1, 2, 4])
    assert parse_set("sysctl:vm.dirty_ratio=5,10") == ("sysctl:vm.dirty_ratio", [5, 10])
    assert parse_set("bs=4k,1M") == ("bs", ["4k", "1M"])
    assert parse_set("direct=true") == ("direct", [True])
    assert parse_set('mount=["noatime,lazytime", "relatime"]') == ("mount", ["noatime,lazytime", "relatime"])
    assert parse_set("sysfs:queue/scheduler=none,mq-deadline") == (
        "sysfs:queue/scheduler",
        ["none", "mq-deadline"],
    )
    for bad in ("jobs", "=1", "jobs=", "jobs=,", "mount=[1"):
        with pytest.raises(UserError, match="--set"):
            parse_set(bad)


def test_set_values_are_validated_like_the_plan(tmp_path: Path) -> None:
    plan = load_plan(write(tmp_path, BASE))
    with pytest.raises(PlanError, match=r"--set jobs=0: must be at least 1"):
        plan.with_overrides(sets=[parse_set("jobs=0")])
    with pytest.raises(PlanError, match=r"--set sysctl:vm.nope=1: unknown knob"):
        plan.with_overrides(sets=[parse_set("sysctl:vm.nope=1")])
    with pytest.raises(PlanError, match=r"unknown axis 'jbos'"):
        plan.with_overrides(sets=[parse_set("jbos=1")])
    with pytest.raises(UserError, match="unknown bed"):
        plan.with_overrides(bed="nvme")


# ------------------------------------------------------------------------------------------
# job files and plans built by recipes


def test_retarget_jobfile() -> None:
    text = (
        "; mine\n[global]\nrw=randwrite\ndirectory=/data\nnumjobs=8\n\n[a]\n"
        "filename=/data/f1:/data/f2\nsize=1g\n[b]\ndirectory=/elsewhere\nbs=4k\n"
    )
    out = retarget_jobfile(text, "/mnt/bed/w", {"numjobs": 2, "direct": True})
    lines = out.splitlines()
    assert lines[2:5] == ["directory=/mnt/bed/w", "numjobs=2", "direct=1"]
    assert "filename=f1:f2" in lines
    assert not any(ln.startswith("directory=/data") or ln == "numjobs=8" for ln in lines)
    assert not any(ln.startswith("directory=/elsewhere") for ln in lines)
    assert lines.count("numjobs=2") == 3  # [global], [a], [b]
    noglobal = retarget_jobfile("[only]\nrw=read\nsize=1m\n", "/b", {})
    assert noglobal.startswith("[global]\ndirectory=/b\n")


def test_jobfile_plan(tmp_path: Path) -> None:
    (tmp_path / "my.fio").write_text("[global]\nrw=write\nbs=64k\n[j1]\nsize=8m\n")
    plan = load_plan(write(tmp_path, '[workload]\njobfile = "my.fio"\n[axes]\njobs = [1, 2]\n'))
    pts = plan.expand()
    assert pts[0].point.params["jobfile"] == "my.fio" and len(str(pts[0].point.params["jobfile_sha1"])) == 12
    text = plan.job(pts[1], "/bed/w")
    assert isinstance(text, str) and "numjobs=2" in text and "directory=/bed/w" in text


def test_plan_from_doc_for_recipes() -> None:
    plan = plan_from_doc(
        {"label": "r", "workload": {"rw": "read", "size": "1M"}, "axes": {"iodepth": [1, 32]}},
        recipe="tag-fairness",
    )
    assert plan.recipe == "tag-fairness" and plan.source == "recipe tag-fairness"
    assert [p.point.recipe for p in plan.expand()] == ["tag-fairness"] * 2
    with pytest.raises(PlanError, match=r"<plan>: key workload.rw"):
        plan_from_doc({"workload": {"rw": "sideways", "size": "1M"}})
    direct = Plan(label="x", workload=Workload(params={"rw": "read", "size": "1M"}))
    assert direct.recipe == "plan:x" and len(direct.expand()) == 1


def test_memory_need_is_the_largest_point_or_none_when_unbounded(tmp_path: Path) -> None:
    """What the guest-memory hold touches for a plan: on a ram or loop bed twice the bed (the
    image and the files' page cache), elsewhere the point's bytes, plus 1 GiB; None (all free
    memory) where iowall cannot bound it."""
    gib, mib = 1 << 30, 1 << 20
    ram = load_plan(write(tmp_path, BASE + "[axes]\njobs = [1, 4]\n"))
    # the largest point writes 4 x 64 MiB: auto bed 1.5 x 256 MiB + 256 MiB, at least 1 GiB
    assert memory_need(ram) == 2 * gib + gib
    sized = load_plan(write(tmp_path, BASE + 'size = "3G"\n'))
    assert memory_need(sized) == 2 * 3 * gib + gib
    on_dir = load_plan(write(tmp_path, BASE.replace('kind = "ram"', f'kind = "dir:{tmp_path}"')))
    assert memory_need(on_dir) == 64 * mib + gib
    jobfile = tmp_path / "my.fio"
    jobfile.write_text("[global]\nrw=write\nbs=64k\n[j1]\nsize=8m\n")
    unbounded = [
        load_plan(write(tmp_path, '[workload]\njobfile = "my.fio"\n')),
        load_plan(write(tmp_path, BASE.replace("[bed]", "[workload.options]\nnrfiles = 9\n[bed]"))),
        load_plan(write(tmp_path, BASE + '[axes]\n"sysctl:vm.nr_hugepages" = [0, 512]\n')),
    ]
    assert [memory_need(p) for p in unbounded] == [None] * 3
