"""What the machine under a benchmark costs for memory a process gets back from the system.

A virtual machine whose balloon driver reports free pages to its host (Linux's free page
reporting, ``virtio_balloon``) hands its host the free blocks of huge-page size, which is what a
large numpy array (numpy asks for transparent huge pages) or a large Arrow or Polars buffer
leaves when it is freed. Memory made from such a block again is faulted in by the host as well
as the guest. On the 2-core machine these figures were measured on, a 256 MB array cost 10-16 µs
per 4 KiB to make once its memory had lain free 3 s, against ~0.55 µs when it was freed just
before (and the first 200 MB array of a process: 0.8 s). Every benchmark that allocates as much
as a huge trace's import or analysis carries that cost, in wall time more than in CPU seconds, and
it varies with how long the memory lay free; on a bare-metal GPU node, or a VM whose memory is
pinned for a passed-through GPU, it is absent. :func:`line` states it beside the load, so that
figures from two machines can be told apart. ``profui`` itself leaves numpy's huge pages off
where pages are reported (``profui.tui.cli._small_pages_where_reported``).

    .venv/bin/python benchmarks/machine.py
"""

from __future__ import annotations

import os
import subprocess
import sys

from profui.capture.conversion.free_pages import reports_free_pages

#: Run in a child (its own memory, not the benchmark's): the µs per 4 KiB to make a numpy array
#: of ``size`` bytes (numpy asks for transparent huge pages for large arrays), just after
#: freeing one as large (warm), then after it lay free ``rest`` seconds.
CHILD = """
import sys, time
import numpy as np
size, rest = int(sys.argv[1]), float(sys.argv[2])
def make():
    t = time.perf_counter()
    a = np.ones(size, np.uint8)
    d = time.perf_counter() - t
    del a
    return d
make()
warm = make()
time.sleep(rest)
cold = make()
pages = size // 4096
print(f"{warm / pages * 1e6:.3f} {cold / pages * 1e6:.3f}")
"""
SIZE = 256 << 20
REST_S = 3.0


def touch_costs() -> tuple[float, float]:
    """µs per page to touch memory freed just before, and freed :data:`REST_S` seconds before."""
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(SIZE), str(REST_S)],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "NUMPY_MADVISE_HUGEPAGE": "1"},  # numpy's default, whatever profui sets
    )
    warm, cold = out.stdout.split()
    return float(warm), float(cold)


def line() -> str:
    """One line for a benchmark's header: the touch costs and whether pages are reported."""
    warm, cold = touch_costs()
    reporting = "on" if reports_free_pages() else "off"
    return (
        f"fresh memory: {cold:.2f} µs/page after lying free {REST_S:.0f} s, {warm:.2f} just freed "
        f"(free page reporting to a hypervisor: {reporting})"
    )


if __name__ == "__main__":
    print(line())
