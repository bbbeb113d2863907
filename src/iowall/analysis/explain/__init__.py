"""Why one run is where it is: the workload's wall-clock budget, the wall that holds it and
the mechanism below, the device side, the rules that fire and their nearest misses. The
entry point is ``run.explain_run(run, batch) -> Explanation`` (frozen facts, ``facts``);
reports turn those facts into words (docs/explain.md)."""
