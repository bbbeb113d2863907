"""Renderers: each module registers, with ``emit.renders``, how its data reads in each format.
Importing the package registers them all, so ``emit`` serves every command's ``--format``."""

from . import compare, doctor, gate, locks, recipe, run, scaling

__all__ = ["compare", "doctor", "gate", "locks", "recipe", "run", "scaling"]
