"""What a trace's devices are, and the words that name them.

Most traces run their device work on GPUs. A JAX run on CPU has device lanes too, but they are
the host threads that execute XLA ops (the JAX importer says so in its source's notes); a CPU-only PyTorch run has no device work at all. Every surface names the
devices from :func:`words_for` of the trace's overview, so a GPU is never claimed where there
is none.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from profui.capture.format.columns import CPU_LANES_NOTE

#: The overview's ``device_type``: device work on GPUs, on CPU device lanes (XLA on CPU), or none.
GPU, CPU, NONE = "gpu", "cpu", "none"


@dataclass(frozen=True)
class DeviceWords:
    """How one kind of device reads: ``GPU`` / ``CPU device``, its lanes, its work."""

    kind: str
    #: the device as it reads inside a sentence ("GPU", "CPU device", "device")
    device: str
    #: a lane label's prefix ("gpu0", "cpu0")
    lane: str
    #: one unit of device work ("kernel", "XLA op")
    work: str
    #: what starting the work is called: a noun, its plural, a participle
    launch: str
    launches: str
    launched: str
    #: the cost of starting many short units of work
    overhead: str

    def devices(self, n: int) -> str:
        """``n`` devices in words (``1 GPU``, ``2 CPU devices``)."""
        return f"{n:,} {self.device}{'' if n == 1 else 's'}"

    @property
    def Device(self) -> str:  # noqa: N802 - the capitalised form, as a heading starts
        """The device at the start of a heading ("GPU", "CPU device", "Device")."""
        return self.device[:1].upper() + self.device[1:]

    @property
    def Work(self) -> str:  # noqa: N802 - the capitalised form, as a heading starts
        """The work at the start of a heading ("Kernel", "XLA op")."""
        return self.work[:1].upper() + self.work[1:]

    @property
    def time(self) -> str:
        """The devices' time ("GPU time", "CPU-device time")."""
        return f"{self.device.replace(' ', '-')} time"

    @property
    def work_time(self) -> str:
        """The time of the work ("kernel time", "XLA-op time")."""
        return f"{self.work.replace(' ', '-')} time"


GPU_WORDS = DeviceWords(GPU, "GPU", "gpu", "kernel", "launch", "launches", "launched", "launch overhead")
CPU_WORDS = DeviceWords(CPU, "CPU device", "cpu", "XLA op", "run", "runs", "executed", "dispatch overhead")
#: A run without device work: nothing is a device, "device" is the neutral word.
NONE_WORDS = DeviceWords(NONE, "device", "dev", "kernel", "launch", "launches", "launched", "launch overhead")


#: Why a surface of device work does not apply to a run without any: true of a CPU-only run and
#: of a GPU run whose device work went untraced (HTA's cupti trace: 8 GPUs listed, only CUPTI's
#: profiler ranges on them).
NO_DEVICE_WORK = "no device work was traced"


def does_not_apply(see: str = "", why: str = NO_DEVICE_WORK) -> str:
    """The one wording of a surface that does not apply to a trace: ``Does not apply: no device
    work was traced.`` for device work on a run without any (``why``, another
    reason), and where to look instead (``see``)."""
    return f"Does not apply: {why}{f'; {see}' if see else ''}."


def manifest_device_type(manifest: Any) -> str:
    """``cpu`` when every source that has device lanes says they are host threads (its importer's
    :data:`~profui.capture.format.columns.CPU_LANES_NOTE`: XLA ops of a JAX run on CPU), else
    ``gpu``."""
    with_devices = [
        s
        for s in manifest.sources
        if isinstance(s, dict) and isinstance(s.get("devices"), list) and s["devices"]
    ]
    if with_devices and all(CPU_LANES_NOTE in (s.get("notes") or ()) for s in with_devices):
        return CPU
    return GPU


def manifest_words(manifest: Any) -> DeviceWords:
    """The words for a trace before analysis has read its events: what its manifest lists (GPUs,
    the sources' devices and their ``device_type``); :func:`words_for` of the overview is the
    answer once it is known."""
    listed = bool(manifest.gpus) or any(
        isinstance(s, dict) and isinstance(s.get("devices"), list) and s["devices"] for s in manifest.sources
    )
    if not listed:
        return NONE_WORDS
    return CPU_WORDS if manifest_device_type(manifest) == CPU else GPU_WORDS


def words_for(overview: Mapping[str, Any] | None) -> DeviceWords:
    """The words for a trace's overview (:func:`profui.analysis.summary.trace_overview`); an
    overview from before ``device_type`` was recorded reads as GPUs, as it was analysed."""
    kind = (overview or {}).get("device_type", GPU)
    return {CPU: CPU_WORDS, NONE: NONE_WORDS}.get(kind, GPU_WORDS)


def fmt_devices(overview: Mapping[str, Any]) -> str:
    """The header's device count: ``4 GPUs`` / ``1 of 8 GPUs active``, ``1 CPU device (XLA)``,
    or ``CPU only`` for a run without device work."""
    from .formatting import fmt_gpus

    kind = overview.get("device_type", GPU)
    if kind == CPU:
        return f"{CPU_WORDS.devices(int(overview.get('devices') or 0))} (XLA)"
    if kind == NONE and not overview.get("gpus_listed"):
        return "CPU only"
    return fmt_gpus(int(overview.get("gpus") or 0), int(overview.get("gpus_listed") or 0))
