"""Where throughput stops scaling: efficiency against linear, the knee and the Universal
Scalability Law (``usl``), curves from a thread sweep (``sweep``), and the `limits` batch's
summary (``limits``: ceilings, buffered vs uncached vs direct per job count, its Why)."""
