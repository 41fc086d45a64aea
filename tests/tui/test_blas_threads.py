"""The ``profui`` entry point keeps numpy's OpenBLAS to one thread (profui makes no BLAS call,
and OpenBLAS's idle workers spin after numpy's import: CPU every command paid), unless the user
set ``OPENBLAS_NUM_THREADS``. Counted as the threads the kernel lists for the process: OpenBLAS's
workers carry the interpreter's own thread name, the other libraries' threads their own."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from realdata import REPO

#: A summary run through the entry point, then the process's threads named like its main thread.
RUN = """
import contextlib, io, json, os, sys
sys.argv = ["profui", "summary", sys.argv[1], "--json"]
from profui.tui.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    try:
        main()
    except SystemExit:
        pass
def comm(task):
    with open(f"/proc/self/task/{task}/comm") as f:
        return f.read().strip()
mine = comm(os.getpid())
print(json.dumps({"numpy": "numpy" in sys.modules, "env": os.environ.get("OPENBLAS_NUM_THREADS"),
                  "like_main": sum(comm(t) == mine for t in os.listdir("/proc/self/task"))}))
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
    assert unset["numpy"] and two["numpy"]  # the summary loaded numpy: OpenBLAS started
    assert unset["env"] == empty["env"] == "1" and two["env"] == "2"
    # OpenBLAS with 2 threads adds one worker named like the main thread; with 1, none
    assert two["like_main"] == unset["like_main"] + 1 == empty["like_main"] + 1, (unset, two)
