"""On a virtual machine whose memory balloon reports free pages to its host, the ``profui`` entry
point leaves numpy's transparent huge pages off (``NUMPY_MADVISE_HUGEPAGE=0``), unless the user
says; elsewhere numpy's default stands.

The balloon is found in Linux's virtio device folder, each device's ``device`` id and
``features`` bits as the kernel writes them (the feature string of this session's machine, a
balloon with free page reporting, is the first case below). Those folders are made here: a
machine's hardware is what a test cannot change. The oracle of the setting is numpy itself: it
reads the variable when it loads and reports its state (``_get_madvise_hugepage``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from profui.capture.conversion.free_pages import reports_free_pages

#: ``/sys/bus/virtio/devices/virtio0/features`` of this session's machine, whose balloon reports
#: free pages (bit 5, VIRTIO_BALLOON_F_REPORTING).
REPORTING = (
    "0110010100000000000000000000000010000000000000000000000000000000"
    "0000000000000000000000000000000000000000000000000000000000000000"
)
#: The same balloon without free page reporting (bit 5 clear).
NOT_REPORTING = REPORTING[:5] + "0" + REPORTING[6:]


def _devices(root: Path, *devices: tuple[str, str]) -> Path:
    """A virtio device folder with one device per ``(device id, features)``."""
    for i, (device, features) in enumerate(devices):
        d = root / f"virtio{i}"
        d.mkdir(parents=True)
        (d / "device").write_text(f"{device}\n")
        (d / "features").write_text(f"{features}\n")
    return root


def test_a_balloon_with_the_reporting_bit_reports(tmp_path: Path) -> None:
    assert reports_free_pages(_devices(tmp_path, ("0x0001", NOT_REPORTING), ("0x0005", REPORTING)))


@pytest.mark.parametrize(
    "devices",
    [
        [("0x0005", NOT_REPORTING)],  # a balloon that does not report
        [("0x0001", REPORTING)],  # bit 5 of a network card is another feature (its MAC)
        [("0x0005", "01100")],  # features shorter than the bit: not set
        [("balloon", REPORTING)],  # an id that is no number: not read as a balloon
        [],
    ],
)
def test_no_balloon_that_reports(tmp_path: Path, devices: list[tuple[str, str]]) -> None:
    assert not reports_free_pages(_devices(tmp_path / "devices", *devices))


def test_no_virtio_folder(tmp_path: Path) -> None:
    assert not reports_free_pages(tmp_path / "absent")


def _numpy_after_entry(tmp_path: Path, devices: Path, env_value: str | None) -> tuple[str, bool]:
    """The variable and numpy's huge-page state in a fresh process that ran the entry point's
    setting with ``devices`` as the machine's virtio folder, then loaded numpy."""
    code = (
        "import os, sys\n"
        "from pathlib import Path\n"
        "import profui.capture.conversion.free_pages as fp\n"
        "fp.VIRTIO_DEVICES = Path(sys.argv[1])\n"
        "from profui.tui import cli\n"
        "assert 'numpy' not in sys.modules\n"
        "cli._small_pages_where_reported()\n"
        "import numpy\n"
        "print(os.environ.get('NUMPY_MADVISE_HUGEPAGE', '-'), numpy._core.multiarray._get_madvise_hugepage())\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "NUMPY_MADVISE_HUGEPAGE"}
    if env_value is not None:
        env["NUMPY_MADVISE_HUGEPAGE"] = env_value
    out = subprocess.run(
        [sys.executable, "-c", code, str(devices)], env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr[-2000:]
    value, state = out.stdout.split()
    return value, state == "True"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="numpy's huge pages are Linux's")
def test_numpy_huge_pages_off_only_where_pages_are_reported(tmp_path: Path) -> None:
    reporting = _devices(tmp_path / "reporting", ("0x0005", REPORTING))
    plain = _devices(tmp_path / "plain", ("0x0005", NOT_REPORTING))
    assert _numpy_after_entry(tmp_path, reporting, None) == ("0", False)
    # elsewhere numpy decides (on where the kernel supports huge pages)
    default = _numpy_after_entry(tmp_path, tmp_path / "absent", None)
    assert default[0] == "-"
    assert _numpy_after_entry(tmp_path, plain, None) == default
    # the user's own setting wins either way
    assert _numpy_after_entry(tmp_path, reporting, "1") == ("1", True)
    assert _numpy_after_entry(tmp_path, plain, "0") == ("0", False)
