"""Renderers: each module registers, with ``emit.renders``, how its data reads in each format.
They are imported on demand (``emit.render`` imports them all when a kind has no renderer
yet), so a light command does not import the heavy ones' numpy and scipy."""

#: The modules holding renderers; ``emit`` imports them all the first time it misses one.
RENDERER_MODULES = (
    "bisect",
    "compare",
    "doctor",
    "explanation",
    "fleet",
    "gate",
    "locks",
    "recipe",
    "run",
    "scaling",
)
