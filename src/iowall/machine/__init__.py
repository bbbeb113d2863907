"""The machine iowall measures on: its facts (``sysinfo``, ``cgroups``) and the primitives of
acting on it (helper programs in ``proc``, signals, the undo ``journal``, the ``machine_lock``,
iowall's directories in ``dirs``, whole-file writes in ``atomic``). It imports only the model
and the vocabulary; beds, probes, workloads and the store build on it."""
