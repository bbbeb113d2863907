"""The vocabulary every layer uses and none owns: errors with their exit codes, byte units,
the knob syntax and policy, the CPU classes, the progress display's protocol. Nothing here
imports anything of iowall but ``errors``; the data these words describe is ``iowall.model``."""
