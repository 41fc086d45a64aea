"""Host metrics through psutil: per-CPU utilisation, memory, disk and network rates, and the
job's process tree (CPU% and RSS summed over the tree)."""

from __future__ import annotations

import time
from collections.abc import Callable

import psutil

Emit = Callable[[int, str, int, str, float], None]
EmitMany = Callable[[int, str, str, list[float]], None]
#: Walking /proc for the job's process tree costs far more than sampling it: refresh it this often.
TREE_PERIOD_S = 1.0


class HostSampler:
    """Keeps the previous counters so each sample emits rates over the last interval."""

    def __init__(self) -> None:
        psutil.cpu_percent(percpu=True)  # prime: the next call reports since now
        self.job: psutil.Process | None = None
        self.procs: dict[int, psutil.Process] = {}
        self.last_tree = 0.0
        self.prev_t = time.monotonic()
        self.prev_disk = _disk()
        self.prev_net = _net()

    def set_job(self, pid: int) -> None:
        """Start following the process tree rooted at ``pid``."""
        try:
            self.job = psutil.Process(pid)
        except psutil.Error:
            self.job = None
        self.last_tree = 0.0

    def job_pids(self) -> list[int]:
        """Pids of the job's process tree as last refreshed."""
        return list(self.procs)

    def sample(self, ts: int, emit: Emit, emit_many: EmitMany | None = None) -> None:
        """Emit one sample of every host metric at ``ts`` (per-CPU values through ``emit_many``)."""
        per_cpu = psutil.cpu_percent(percpu=True)
        if emit_many is not None:
            emit_many(ts, "cpu", "util_pct", per_cpu)
        else:
            for i, v in enumerate(per_cpu):
                emit(ts, "cpu", i, "util_pct", v)
        if per_cpu:
            emit(ts, "cpu", -1, "util_pct", sum(per_cpu) / len(per_cpu))
        vm = psutil.virtual_memory()
        emit(ts, "mem", -1, "used_bytes", float(vm.total - vm.available))
        emit(ts, "mem", -1, "available_bytes", float(vm.available))
        now = time.monotonic()
        dt = max(now - self.prev_t, 1e-6)
        self.prev_t = now
        disk, net = _disk(), _net()
        if disk is not None and self.prev_disk is not None:
            emit(ts, "disk", -1, "read_bytes_per_s", max(0, disk[0] - self.prev_disk[0]) / dt)
            emit(ts, "disk", -1, "write_bytes_per_s", max(0, disk[1] - self.prev_disk[1]) / dt)
        if net is not None and self.prev_net is not None:
            emit(ts, "net", -1, "rx_bytes_per_s", max(0, net[0] - self.prev_net[0]) / dt)
            emit(ts, "net", -1, "tx_bytes_per_s", max(0, net[1] - self.prev_net[1]) / dt)
        self.prev_disk, self.prev_net = disk, net
        if self.job is not None:
            self._sample_job(self.job, ts, emit)

    def _sample_job(self, job: psutil.Process, ts: int, emit: Emit) -> None:
        if time.monotonic() - self.last_tree >= TREE_PERIOD_S:
            self.last_tree = time.monotonic()
            try:
                tree = [job, *job.children(recursive=True)]
            except psutil.Error:
                tree = []
            fresh: dict[int, psutil.Process] = {}
            for p in tree:
                known = self.procs.get(p.pid)
                if known is None:
                    try:
                        p.cpu_percent()  # prime
                    except psutil.Error:
                        continue
                    known = p
                fresh[p.pid] = known
            self.procs = fresh
        cpu = rss = 0.0
        alive = 0
        for pid, p in list(self.procs.items()):
            try:
                with p.oneshot():
                    cpu += p.cpu_percent()
                    rss += p.memory_info().rss
                alive += 1
            except psutil.Error:
                self.procs.pop(pid, None)
        if alive:
            emit(ts, "proc", -1, "cpu_pct", cpu)
            emit(ts, "proc", -1, "rss_bytes", rss)
            emit(ts, "proc", -1, "num_procs", float(alive))


def _disk() -> tuple[int, int] | None:
    try:
        c = psutil.disk_io_counters()
    except Exception:
        return None
    return (c.read_bytes, c.write_bytes) if c is not None else None


def _net() -> tuple[int, int] | None:
    try:
        c = psutil.net_io_counters()
    except Exception:
        return None
    return (c.bytes_recv, c.bytes_sent) if c is not None else None
