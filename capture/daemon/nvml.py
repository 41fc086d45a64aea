"""The one place that talks to NVML (through ``pynvml``).

Everything GPU-related in profcap goes through :class:`Nvml`, so tests fake NVML only here, at
the lowest layer: a stand-in ``pynvml`` module object with the same few functions. NVML errors
never stop sampling: a metric that is not supported is dropped once (and said once); a metric
that fails mid-run is retried every sample and its losses are counted for the manifest notes.
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

Emit = Callable[[int, str, int, str, float], None]
#: PCIe throughput queries block ~20 ms each inside NVML: sample them at most this often.
PCIE_PERIOD_S = 1.0


@dataclass
class _Loss:
    error: str
    first_ns: int
    count: int = 0


@dataclass
class Nvml:
    """An initialised NVML with its device handles."""

    nv: Any
    handles: list[Any]
    unsupported: set[tuple[int, str]] = field(default_factory=set)
    seen_ok: set[tuple[int, str]] = field(default_factory=set)
    losses: dict[tuple[int, str], _Loss] = field(default_factory=dict)
    last_pcie: float = 0.0

    @classmethod
    def open(cls, module: Any | None = None) -> tuple[Nvml | None, str | None]:
        """Initialise NVML; return (nvml, None) or (None, the reason to say once)."""
        try:
            nv = module if module is not None else importlib.import_module("pynvml")
        except ImportError as exc:
            return None, f"no GPU metrics: pynvml is not installed ({exc})"
        try:
            nv.nvmlInit()
            count = nv.nvmlDeviceGetCount()
            handles = [nv.nvmlDeviceGetHandleByIndex(i) for i in range(count)]
        except Exception as exc:  # NVMLError_LibraryNotFound, DriverNotLoaded, ...
            return None, f"no GPU metrics: NVML unavailable ({_errstr(exc)})"
        if not handles:
            return None, "no GPU metrics: NVML sees no GPUs"
        return cls(nv, handles), None

    def close(self) -> None:
        """Shut NVML down (best effort)."""
        try:
            self.nv.nvmlShutdown()
        except Exception:
            pass

    def devices(self) -> list[dict[str, Any]]:
        """Per GPU: index, name, uuid, memory_total_bytes (for the manifest)."""
        out = []
        for i, h in enumerate(self.handles):
            info: dict[str, Any] = {"index": i}
            for key, fn in (("name", "nvmlDeviceGetName"), ("uuid", "nvmlDeviceGetUUID")):
                try:
                    value = getattr(self.nv, fn)(h)
                    info[key] = value.decode() if isinstance(value, bytes) else str(value)
                except Exception:
                    pass
            try:
                info["memory_total_bytes"] = int(self.nv.nvmlDeviceGetMemoryInfo(h).total)
            except Exception:
                pass
            out.append(info)
        return out

    def driver_version(self) -> str | None:
        """The NVIDIA driver version, when NVML tells."""
        try:
            v = self.nv.nvmlSystemGetDriverVersion()
            return v.decode() if isinstance(v, bytes) else str(v)
        except Exception:
            return None

    def sample(self, ts: int, job_pids: Iterable[int], emit: Emit) -> None:
        """Read every GPU once and ``emit(ts, "gpu", index, metric, value)`` per value."""
        nv = self.nv
        pids = set(job_pids)
        do_pcie = time.monotonic() - self.last_pcie >= PCIE_PERIOD_S
        if do_pcie:
            self.last_pcie = time.monotonic()
        for i in range(len(self.handles)):
            util = self._get(ts, i, "util", lambda h: nv.nvmlDeviceGetUtilizationRates(h))
            if util is not None:
                emit(ts, "gpu", i, "util_pct", float(util.gpu))
                emit(ts, "gpu", i, "mem_util_pct", float(util.memory))
            mem = self._get(ts, i, "memory", lambda h: nv.nvmlDeviceGetMemoryInfo(h))
            if mem is not None:
                emit(ts, "gpu", i, "mem_used_bytes", float(mem.used))
                emit(ts, "gpu", i, "mem_total_bytes", float(mem.total))
            power = self._get(ts, i, "power", lambda h: nv.nvmlDeviceGetPowerUsage(h))
            if power is not None:
                emit(ts, "gpu", i, "power_w", power / 1000.0)
            temp = self._get(
                ts, i, "temperature", lambda h: nv.nvmlDeviceGetTemperature(h, nv.NVML_TEMPERATURE_GPU)
            )
            if temp is not None:
                emit(ts, "gpu", i, "temp_c", float(temp))
            clock = self._get(ts, i, "sm_clock", lambda h: nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM))
            if clock is not None:
                emit(ts, "gpu", i, "sm_clock_mhz", float(clock))
            if do_pcie:
                for metric, read in (
                    (
                        "pcie_rx_bytes_per_s",
                        lambda h: nv.nvmlDeviceGetPcieThroughput(h, nv.NVML_PCIE_UTIL_RX_BYTES),
                    ),
                    (
                        "pcie_tx_bytes_per_s",
                        lambda h: nv.nvmlDeviceGetPcieThroughput(h, nv.NVML_PCIE_UTIL_TX_BYTES),
                    ),
                ):
                    kb = self._get(ts, i, metric, read)
                    if kb is not None:
                        emit(ts, "gpu", i, metric, float(kb) * 1024.0)
            procs = self._get(ts, i, "processes", lambda h: nv.nvmlDeviceGetComputeRunningProcesses(h))
            if procs is not None:
                used = sum(int(p.usedGpuMemory or 0) for p in procs if p.pid in pids)
                emit(ts, "gpu", i, "job_mem_used_bytes", float(used))

    def _get(self, ts: int, gpu: int, what: str, fn: Callable[[Any], Any]) -> Any:
        key = (gpu, what)
        if key in self.unsupported:
            return None
        try:
            value = fn(self.handles[gpu])
        except Exception as exc:
            if key not in self.seen_ok and _not_supported(self.nv, exc):
                self.unsupported.add(key)
                return None
            loss = self.losses.get(key)
            if loss is None:
                loss = self.losses[key] = _Loss(_errstr(exc), ts)
            loss.count += 1
            return None
        self.seen_ok.add(key)
        return value

    def notes(self) -> list[str]:
        """One line per metric that was unsupported or lost samples to NVML errors."""
        lines = []
        for gpu, what in sorted(self.unsupported):
            lines.append(f"gpu{gpu} {what}: not supported by NVML here; not sampled")
        for (gpu, what), loss in sorted(self.losses.items()):
            when = time.strftime("%H:%M:%S", time.localtime(loss.first_ns / 1e9))
            lines.append(f"gpu{gpu} {what}: NVML error '{loss.error}' from {when}; {loss.count} samples lost")
        return lines


def _errstr(exc: BaseException) -> str:
    try:
        return str(exc) or type(exc).__name__
    except Exception:
        return type(exc).__name__


def _not_supported(nv: Any, exc: BaseException) -> bool:
    code = getattr(nv, "NVML_ERROR_NOT_SUPPORTED", 3)
    return getattr(exc, "value", None) == code
