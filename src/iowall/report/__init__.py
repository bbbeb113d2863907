"""Rendering: every module registers its renderers with ``emit.renders`` on import."""

from . import recipe  # noqa: F401  (registers the Report renderers)
