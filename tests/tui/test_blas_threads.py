"""The ``profui`` entry point keeps numpy's OpenBLAS to one thread (profui makes no BLAS call,
and OpenBLAS's idle workers spin after numpy's import: CPU every command paid), unless the user
set ``OPENBLAS_NUM_THREADS``. The oracle is OpenBLAS itself: its own thread count, asked through
the library numpy loaded (``openblas_get_num_threads``, under the prefix and suffix numpy's build
gives it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from realdata import REPO

#: A summary run through the entry point, then OpenBLAS's thread count in that process.
RUN = """
import contextlib, ctypes, io, json, os, sys
sys.argv = ["profui", "summary", sys.argv[1], "--json"]
from profui.tui.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    try:
        main()
    except SystemExit:
        pass
with open("/proc/self/maps") as maps:
    libs = sorted({line.split()[-1] for line in maps if "openblas" in line.lower() and ".so" in line})
threads = None
for lib in libs:
    for name in ("openblas_get_num_threads", "openblas_get_num_threads64_",
                 "scipy_openblas_get_num_threads64_", "scipy_openblas_get_num_threads"):
        f = getattr(ctypes.CDLL(lib), name, None)
        if f is not None:
            threads = f()
            break
print(json.dumps({"numpy": "numpy" in sys.modules, "env": os.environ.get("OPENBLAS_NUM_THREADS"),
                  "libs": libs, "threads": threads}))
"""


def _run(tmp_path, env_value: str | None) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    if env_value is not None:
        env["OPENBLAS_NUM_THREADS"] = env_value
    env["PROFUI_CACHE"] = str(tmp_path / "cache")
    proc = subprocess.run(
        [sys.executable, "-c", RUN, str(REPO / "samples" / "mlp_cpu")],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.splitlines()[-1])


def test_one_blas_thread_unless_the_user_says_otherwise(tmp_path) -> None:
    unset, empty, two = _run(tmp_path, None), _run(tmp_path, ""), _run(tmp_path, "2")
    assert unset["numpy"] and unset["libs"], unset  # the summary loaded numpy and its OpenBLAS
    assert unset["env"] == empty["env"] == "1" and two["env"] == "2"
    assert (unset["threads"], empty["threads"], two["threads"]) == (1, 1, 2), (unset, empty, two)
