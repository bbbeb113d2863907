"""Running points: ``session`` (beds, probes, knobs, store, label, progress, cache drops),
``runner`` (interleaved rounds, each run stored as it ends) and ``repeat`` (how often a point
runs: fixed, or ``auto`` until its median is decided). Runners (``recipes``, ``plan``) call it;
it returns data and never renders."""
