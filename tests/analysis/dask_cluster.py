"""A Dask scheduler and its workers, each its own process on 127.0.0.1, started the Dask way
(``dask scheduler`` on port 0 writing its address to a scheduler file, ``dask worker`` given it):
no port is chosen before the scheduler binds it, so tests running at once cannot collide."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

DASK = str(Path(sys.executable).with_name("dask"))


@contextmanager
def dask_cluster(logs: Path, cwd: Path | None = None, workers: int = 2) -> Iterator[tuple[str, list]]:
    """``(address, worker processes)`` of a scheduler and ``workers`` one-thread workers, their
    logs under ``logs``, run in ``cwd`` (default: this process's); all stopped on exit."""
    logs.mkdir(parents=True, exist_ok=True)
    sched_file = logs / "scheduler.json"

    def start(cmd: list[str], log: str) -> subprocess.Popen:
        return subprocess.Popen(
            cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=(logs / log).open("w"), stdin=subprocess.DEVNULL
        )

    procs = [
        start(
            [
                DASK,
                "scheduler",
                "--host",
                "127.0.0.1",
                "--port",
                "0",
                "--no-dashboard",
                "--scheduler-file",
                str(sched_file),
            ],
            "scheduler.log",
        )
    ]
    try:
        deadline = time.monotonic() + 60
        while not sched_file.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        address = json.loads(sched_file.read_text())["address"]
        started = [
            start(
                [
                    DASK,
                    "worker",
                    address,
                    "--nthreads",
                    "1",
                    "--no-nanny",
                    "--no-dashboard",
                    "--host",
                    "127.0.0.1",
                ],
                f"worker{i}.log",
            )
            for i in range(workers)
        ]
        procs += started
        from distributed import Client

        with Client(address, timeout="30s") as c:
            c.wait_for_workers(workers, timeout=60)
        yield address, started
    finally:
        for p in reversed(procs):  # the workers while their scheduler still answers, then it
            if p.poll() is None:
                p.terminate()
        for p in procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
