"""Build hook: compile the C engine (engine/) into the package as iowall/_bin/iowall-engine,
and tag the wheel for the platform it was compiled on (py3-none-linux_x86_64): a pure-Python
tag (py3-none-any) would let pip install an x86 engine on an arm64 fleet host."""

import os
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py

try:  # setuptools >= 70.1 carries bdist_wheel; before, the wheel package did
    from setuptools.command.bdist_wheel import bdist_wheel
except ImportError:
    from wheel.bdist_wheel import bdist_wheel

HERE = os.path.dirname(os.path.abspath(__file__))


class BuildWithEngine(build_py):
    """Run ``make -C engine`` so that installing the package also builds its engine."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            out = os.path.join(HERE, "src", "iowall", "_bin")
        else:
            out = os.path.join(os.path.abspath(self.build_lib), "iowall", "_bin")
        os.makedirs(out, exist_ok=True)
        subprocess.run(["make", "-s", "-C", os.path.join(HERE, "engine"), f"OUT={out}"], check=True)


class PlatformWheel(bdist_wheel):
    """Any Python 3, no ABI (no extension module), this platform (the engine binary)."""

    def finalize_options(self) -> None:
        super().finalize_options()
        self.root_is_pure = False

    def get_tag(self) -> tuple[str, str, str]:
        return "py3", "none", super().get_tag()[2]


setup(cmdclass={"build_py": BuildWithEngine, "bdist_wheel": PlatformWheel})
