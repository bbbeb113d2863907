"""Kernel A/B: two kernels booted in turn in virtme-ng guests, one recipe, one compare."""
