"""Units, points and fingerprints."""

import pytest

from iowall.model import Point, fingerprint
from iowall.vocab.errors import UserError
from iowall.vocab.units import fio_size, fmt_bytes, fmt_metric, fmt_rate, parse_size


def test_parse_size_binary_units() -> None:
    assert parse_size("4G") == 4 << 30
    assert parse_size("512MiB") == 512 << 20
    assert parse_size("1048576") == 1 << 20
    assert parse_size("25%", of_total=1000) == 250


@pytest.mark.parametrize("bad", ["", "12Q", "G4", "-1G", "1.2.3G"])
def test_parse_size_rejects(bad: str) -> None:
    with pytest.raises(UserError):
        parse_size(bad)


def test_formats() -> None:
    assert fmt_bytes(6 << 30) == "6.0 GiB"
    assert fmt_rate(3125 * (1 << 20)) == "3125MiB/s"
    assert fmt_rate(12.34 * (1 << 30)) == "12.3GiB/s"
    assert fio_size(2 << 20) == "2m" and fio_size(1536 << 10) == "1536k" and fio_size(1000) == "1000"
    # seconds: none at all reads 0s (a table of throttled time), not 0.0us
    assert [fmt_metric(v, "s") for v in (0.0, 44e-6, 0.125, 12.5)] == ["0s", "44.0us", "125.00ms", "12.50s"]


def test_fingerprint_ignores_kernel_but_not_params() -> None:
    p = Point("limits", {"jobs": 1})
    env_a = {"kernel": "6.1", "host": {"cpu_model": "x", "cpu_count": 2, "mem_total_bytes": 1}}
    env_b = {**env_a, "kernel": "6.18"}
    bed = {"kind": "ram", "fs": "xfs", "image": "/dev/shm/a"}
    assert fingerprint(p, bed, env_a) == fingerprint(p, bed, env_b)
    assert fingerprint(p, bed, env_a) != fingerprint(Point("limits", {"jobs": 2}), bed, env_a)
    assert fingerprint(p, bed, env_a) != fingerprint(p, {**bed, "fs": "ext4"}, env_a)
    # the image path is not a shape fact
    assert fingerprint(p, bed, env_a) == fingerprint(p, {**bed, "image": "/dev/shm/b"}, env_a)
