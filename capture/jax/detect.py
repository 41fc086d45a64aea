"""Telling a JAX profiler trace from a Kineto trace by its first bytes, before either is parsed."""

from __future__ import annotations

import gzip
import re
import zlib
from pathlib import Path

from profui.capture.format.regular import not_regular

#: XLA's profiler names its processes ``/host:CPU``, ``/device:GPU:0`` ...; Kineto never does.
#: A name in an array is still XLA's (the JAX importer then refuses it, naming the problem).
_XLA_PROCESS = re.compile(rb'"name"\s*:\s*(?:\[\s*)?"/(?:host|device):')
_HEAD = 256 << 10


def is_jax_trace(path: Path) -> bool:
    """True when the file (plain or gzip JSON) names XLA profiler processes in its first 256 KiB.

    Only a regular file is opened (a FIFO would block): anything else is left to the Kineto
    reader, which names the problem."""
    if not_regular(path):
        return False
    try:
        with open(path, "rb") as fh:
            magic = fh.read(2)
        opener = gzip.open if magic == b"\x1f\x8b" else open
        with opener(path, "rb") as fh:
            head = fh.read(_HEAD)
    except (OSError, EOFError, zlib.error):
        return False  # the Kineto reader names what is wrong with the file
    return bool(_XLA_PROCESS.search(head))
