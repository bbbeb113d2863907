"""Settings applied to the machine for a run and always restored afterwards: knobs
(``knob_session``: sysctl, sysfs of the bed's device, mkfs and mount options, journaled) and
guest memory held backed (``guestmem``: a knob, and a touch of free memory). Above ``beds``
because a bed's device is where a ``sysfs:queue/…`` knob resolves."""
