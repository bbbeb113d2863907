"""Did it regress: base against new run sets (``compare``), the calibrated rule and its
statistics (``stats``, ``tdist``, ``calibration``), the gate's decision (``gate``,
``series_gate``), a point's history with change points (``history``, ``changepoints``) and
the early test of the newest results (``early``), and when a point has run enough
(``repeat_rule``, ``samples``)."""
