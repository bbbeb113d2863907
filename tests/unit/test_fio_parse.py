"""fio job files and JSON parsing."""

import pytest

from iowall.errors import UserError
from iowall.workloads.fio import JobFile, JobSection, distribute, parse_metrics


def test_render_jobfile() -> None:
    j = JobFile({"rw": "write", "direct": 0}, [JobSection("a", {"filename": ["x", "y"]})])
    assert j.render() == "[global]\nrw=write\ndirect=0\n\n[a]\nfilename=x:y\n"


def test_distribute() -> None:
    assert distribute(list("abcde"), 2) == [["a", "c", "e"], ["b", "d"]]
    with pytest.raises(UserError):
        distribute(["a"], 2)


def test_parse_metrics_sums_groups() -> None:
    raw = {"jobs": [
        {"read": {"io_bytes": 0}, "write": {"bw_bytes": 100, "iops": 2.5, "io_bytes": 1000,
                                            "runtime": 10000,
                                            "clat_ns": {"percentile": {"99.000000": 5000}}},
         "usr_cpu": 1.0, "sys_cpu": 2.0},
        {"write": {"bw_bytes": 50, "iops": 1.0, "io_bytes": 500, "runtime": 12000},
         "usr_cpu": 1.0, "sys_cpu": 1.0, "error": 28}]}
    m = {x.name: x.value for x in parse_metrics(raw)}
    assert m["write_bw_bytes_per_s"] == 150 and m["write_iops"] == 3.5
    assert m["write_runtime_s"] == 12.0 and m["write_io_bytes"] == 1500
    assert "read_bw_bytes_per_s" not in m and m["fio_error"] == 28
    assert "write_clat_p99_s" not in m  # only for a single group
