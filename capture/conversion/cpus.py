"""The CPUs this process may run on: the one count a conversion's threads and the allocator's
arenas are sized by."""

from __future__ import annotations

import os


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity: ``taskset``, a Slurm or container cpuset),
    else the machine's where the platform cannot say."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1
