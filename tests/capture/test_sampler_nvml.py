"""GPU sampling with NVML faked at the lowest layer: a stand-in ``pynvml`` module (this machine
has no NVIDIA driver). Everything above it — profui's NVML layer, the daemon, the metrics files,
the manifest — is the real code. Includes NVML errors mid-run and unsupported queries."""

from __future__ import annotations

import sys
import types

from test_profcap_support import manifest, read_metrics, run_profcap

from profui.capture.daemon.nvml import Nvml

#: The fake pynvml. Two GPUs; GPU 1's power query fails with "GPU is lost" from its
#: FAIL_AFTER+1-th call on; PCIe throughput is not supported; every process whose command line
#: holds "job.py" uses 1 GiB on each GPU.
FAKE_PYNVML = r"""
import os
from types import SimpleNamespace

NVML_ERROR_NOT_SUPPORTED = 3
NVML_ERROR_GPU_IS_LOST = 15
NVML_TEMPERATURE_GPU = 0
NVML_CLOCK_SM = 1
NVML_PCIE_UTIL_TX_BYTES = 0
NVML_PCIE_UTIL_RX_BYTES = 1
FAIL_AFTER = int(os.environ.get("FAKE_NVML_FAIL_AFTER", "3"))
CALLS = {"power": [0, 0], "pcie": 0}
PROCS = None  # list of pids, or None: every process whose command line holds "job.py"


class NVMLError(Exception):
    def __init__(self, value):
        self.value = value

    def __str__(self):
        return {3: "Not Supported", 15: "GPU is lost"}.get(self.value, "Unknown Error")


def nvmlInit(): pass
def nvmlShutdown(): pass
def nvmlDeviceGetCount(): return 2
def nvmlDeviceGetHandleByIndex(i): return i
def nvmlDeviceGetName(h): return "Fake H100 80GB"
def nvmlDeviceGetUUID(h): return f"GPU-fake-{h}"
def nvmlSystemGetDriverVersion(): return "550.54.15"
def nvmlDeviceGetMemoryInfo(h): return SimpleNamespace(total=80 << 30, used=(h + 1) << 30, free=(79 - h) << 30)
def nvmlDeviceGetUtilizationRates(h): return SimpleNamespace(gpu=50 + h, memory=20 + h)
def nvmlDeviceGetTemperature(h, sensor): return 60 + h
def nvmlDeviceGetClockInfo(h, clock): return 1980


def nvmlDeviceGetPowerUsage(h):
    CALLS["power"][h] += 1
    if h == 1 and CALLS["power"][h] > FAIL_AFTER:
        raise NVMLError(NVML_ERROR_GPU_IS_LOST)
    return 300_000 + 1000 * h


def nvmlDeviceGetPcieThroughput(h, counter):
    CALLS["pcie"] += 1
    raise NVMLError(NVML_ERROR_NOT_SUPPORTED)


def nvmlDeviceGetComputeRunningProcesses(h):
    pids = PROCS
    if pids is None:
        pids = []
        for d in os.listdir("/proc"):
            try:
                if d.isdigit() and b"job.py" in open(f"/proc/{d}/cmdline", "rb").read():
                    pids.append(int(d))
            except OSError:
                pass
    return [SimpleNamespace(pid=p, usedGpuMemory=1 << 30) for p in pids] + [SimpleNamespace(pid=1, usedGpuMemory=None)]
"""


def _fake_module(fail_after: int) -> types.ModuleType:
    mod = types.ModuleType("pynvml")
    exec(compile(FAKE_PYNVML, "fake_pynvml.py", "exec"), mod.__dict__)
    mod.FAIL_AFTER = fail_after
    return mod


def test_nvml_layer_samples_every_gpu_and_counts_losses(monkeypatch):
    fake = _fake_module(fail_after=3)
    fake.PROCS = [4242, 4243]
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    nv, why = Nvml.open()
    assert why is None and nv is not None
    assert [d["name"] for d in nv.devices()] == ["Fake H100 80GB"] * 2
    assert nv.devices()[1]["memory_total_bytes"] == 80 << 30 and nv.driver_version() == "550.54.15"
    rows: list[tuple] = []
    for k in range(10):
        nv.sample(1_000 + k, [4242, 4243, 7], lambda *r: rows.append(r))
    by = {}
    for _ts, source, gpu, metric, value in rows:
        assert source == "gpu"
        by.setdefault((gpu, metric), []).append(value)
    assert by[(0, "util_pct")] == [50.0] * 10 and by[(1, "util_pct")] == [51.0] * 10
    assert by[(1, "mem_used_bytes")] == [float(2 << 30)] * 10
    assert by[(0, "power_w")] == [300.0] * 10
    assert by[(1, "power_w")] == [301.0] * 3  # lost from the 4th sample on; the rest goes on
    assert len(by[(1, "temp_c")]) == 10 and by[(1, "sm_clock_mhz")] == [1980.0] * 10
    assert by[(0, "job_mem_used_bytes")] == [float(2 << 30)] * 10  # two job pids, 1 GiB each
    assert (0, "pcie_rx_bytes_per_s") not in by
    assert fake.CALLS["pcie"] == 4  # tried once per GPU and direction, then dropped as unsupported
    notes = nv.notes()
    assert any(n.startswith("gpu1 power: NVML error 'GPU is lost'") and "7 samples lost" in n for n in notes)
    assert "gpu0 pcie_rx_bytes_per_s: not supported by NVML here; not sampled" in notes
    assert not any(n.startswith("gpu0 power") for n in notes)


def test_nvml_missing_or_failing_says_why(monkeypatch):
    broken = _fake_module(fail_after=0)

    def no_driver():
        raise broken.NVMLError(9)

    broken.nvmlInit = no_driver
    monkeypatch.setitem(sys.modules, "pynvml", broken)
    nv, why = Nvml.open()
    assert nv is None and why == "no GPU metrics: NVML unavailable (Unknown Error)"
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import pynvml -> ImportError
    nv, why = Nvml.open()
    assert nv is None and why.startswith("no GPU metrics: pynvml is not installed")


def test_profcap_records_gpus_from_nvml_and_notes_errors_mid_run(tmp_path):
    fake_dir = tmp_path / "fake"
    fake_dir.mkdir()
    (fake_dir / "pynvml.py").write_text(FAKE_PYNVML)
    job = "import time\nfor _ in range(30):\n    time.sleep(0.1)\n"
    proc, trace = run_profcap(
        tmp_path,
        ["--no-trace", "--hz", "10"],
        job,
        env={"PYTHONPATH": str(fake_dir), "FAKE_NVML_FAIL_AFTER": "5"},
    )
    assert proc.returncode == 0, proc.stderr
    m = manifest(trace)
    assert [g["name"] for g in m["gpus"]] == ["Fake H100 80GB", "Fake H100 80GB"]
    assert [g["uuid"] for g in m["gpus"]] == ["GPU-fake-0", "GPU-fake-1"]
    assert m["versions"]["nvidia_driver"] == "550.54.15"
    rows = [r for r in read_metrics(trace) if r["source"] == "gpu"]
    util = {g: [r for r in rows if r["metric"] == "util_pct" and r["device"] == g] for g in (0, 1)}
    n = len(util[0])
    assert n == len(util[1]) and 20 <= n <= 40  # ~3 s at 10 Hz
    power1 = [r for r in rows if r["metric"] == "power_w" and r["device"] == 1]
    power0 = [r for r in rows if r["metric"] == "power_w" and r["device"] == 0]
    assert len(power1) == 5 and len(power0) == n
    # the job (python job.py) shows as 1 GiB on each GPU once the sampler has found it; a
    # sample taken after it exited (the last one, on a loaded machine) rightly reads 0
    job_mem = [r["value"] for r in rows if r["metric"] == "job_mem_used_bytes" and r["device"] == 0]
    gone = 0
    while job_mem and job_mem[-1] == 0.0:
        job_mem.pop()
        gone += 1
    assert job_mem and job_mem[-1] == float(1 << 30) and gone <= 5
    assert any(
        x.startswith("gpu1 power: NVML error 'GPU is lost'") and f"{n - 5} samples lost" in x
        for x in m["notes"]
    )
    assert any(x.startswith("gpu1 pcie_tx_bytes_per_s: not supported") for x in m["notes"])
    assert not any("no GPU metrics" in x for x in m["notes"])
