"""Synthetic scale: a real Kineto trace replicated along time, for shapes the corpus lacks.

Copy ``k`` (0-based) of every event is shifted by ``k`` times the trace's span (plus 1 ms) and its
ids (``correlation``, ``External id``, ``Ev Idx``, ``Sequence number``, flow ``id``) are offset by
``k`` times the largest id, so the copies never share a launch or a flow. Step markers
(``ProfilerStep#N``) either go on numbering (``distinct``: copy ``k`` holds ``N + k·steps``) or
repeat the same numbers in every copy (``repeated``: as a profiler restarted in one process
writes). Metadata events and the top-level fields are written once.

    python benchmarks/replicate_trace.py SRC.json.gz COPIES {distinct,repeated} OUT.json
"""

from __future__ import annotations

import gzip
import json
import re
import sys
from pathlib import Path

import msgspec

_STEP = re.compile(r"ProfilerStep#(\d+)$")
_IDS = ("correlation", "External id", "Ev Idx", "Sequence number")


def _load(src: Path) -> dict:
    opener = gzip.open if src.suffix == ".gz" else open
    with opener(src, "rb") as f:
        return json.load(f)


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def replicate(src: Path, copies: int, mode: str, out: Path) -> int:
    """Write ``copies`` copies of ``src`` along time into ``out`` (Kineto JSON); returns the
    number of trace events written."""
    if mode not in ("distinct", "repeated"):
        raise ValueError(f"mode must be distinct or repeated, not {mode!r}")
    doc = _load(src)
    events = doc.pop("traceEvents")
    timed = [e for e in events if "ts" in e and e.get("ph") != "M"]
    start = min(e["ts"] for e in timed)
    span = max(e["ts"] + e.get("dur", 0) for e in timed) - start + 1000
    top_id = 1 + max(
        max((_int(e.get("id")) for e in events), default=0),
        max((_int((e.get("args") or {}).get(k)) for e in events for k in _IDS), default=0),
    )
    numbers = [int(m.group(1)) for e in events if (m := _STEP.match(str(e.get("name", ""))))]
    n_steps = max(numbers) - min(numbers) + 1 if numbers else 0
    enc = msgspec.json.Encoder()
    written = 0
    with open(out, "wb") as f:
        f.write(b'{"traceEvents": [')
        for k in range(copies):
            for e in events:
                if k and (e.get("ph") == "M" or "ts" not in e):
                    continue
                if k:
                    e = _shifted(e, k * span, k * top_id, k * n_steps if mode == "distinct" else 0)
                f.write((b"," if written else b"") + enc.encode(e))
                written += 1
        f.write(b"]")
        for key, value in doc.items():
            f.write(b"," + enc.encode(key) + b":" + enc.encode(value))
        f.write(b"}")
    return written


def _shifted(e: dict, dt: int | float, did: int, dstep: int) -> dict:
    e = dict(e)
    e["ts"] = e["ts"] + dt
    if _int(e.get("id")):
        e["id"] = e["id"] + did
    args = e.get("args")
    if args:
        args = dict(args)
        for key in _IDS:
            if _int(args.get(key)) > 0:
                args[key] += did
        e["args"] = args
    if dstep and (m := _STEP.match(str(e.get("name", "")))):
        e["name"] = f"ProfilerStep#{int(m.group(1)) + dstep}"
    return e


if __name__ == "__main__":
    src, copies, mode, out = sys.argv[1:5]
    n = replicate(Path(src), int(copies), mode, Path(out))
    print(f"{out}: {n:,} trace events ({copies} {mode} copies of {Path(src).name}; synthetic scale)")
