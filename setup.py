"""Build hook: compile the C engine (engine/) into the package as iowall/_bin/iowall-engine."""

import os
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py

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


setup(cmdclass={"build_py": BuildWithEngine})
