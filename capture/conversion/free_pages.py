"""Whether this machine is a virtual machine that hands the memory its processes free back to
its host: its memory balloon reports free pages (Linux's free page reporting, ``virtio_balloon``
with the feature ``VIRTIO_BALLOON_F_REPORTING``).

There the free blocks the host took back are the ones of huge-page size, which is what a huge
page is made from: a large numpy array (numpy asks for transparent huge pages) then costs ~20×
as much to make as one in memory just freed (``benchmarks/machine.py``).
"""

from __future__ import annotations

from pathlib import Path

#: Where Linux lists the virtio devices.
VIRTIO_DEVICES = Path("/sys/bus/virtio/devices")
#: The virtio device id of a memory balloon.
BALLOON_DEVICE = 0x0005
#: The feature bit of a balloon that reports free pages to its host (virtio 1.1, 5.5.3).
REPORTING_BIT = 5


def reports_free_pages(devices: Path | None = None) -> bool:
    """Whether a memory balloon in ``devices`` (Linux's virtio device folder,
    :data:`VIRTIO_DEVICES` when not given) reports free pages to the hypervisor: its ``device``
    id is a balloon's and its ``features`` (one 0/1 character per feature bit, bit 0 first) have
    the reporting bit. False where there is no such folder."""
    try:
        found = list((VIRTIO_DEVICES if devices is None else devices).iterdir())
    except OSError:
        return False
    for dev in found:
        try:
            if int((dev / "device").read_text().strip(), 16) != BALLOON_DEVICE:
                continue
            bits = (dev / "features").read_text().strip()
        except (OSError, ValueError):
            continue
        if len(bits) > REPORTING_BIT and bits[REPORTING_BIT] == "1":
            return True
    return False
