"""The timeline colours as communication exactly the kernels the communication analysis reads.

One rule (``analysis/comm.py:COMM_PATTERN``) decides both. Checked against the analysis's own
selection (:func:`profui.analysis.comm.comm_kernels` over the trace's events, apart from the
timeline's index) and against the README's counts of the traces' NCCL kernels, counted from the
events files' ``kind`` and ``name`` columns read with pyarrow. The GPU annotations and host ops
named after the same collectives (``nccl:all_reduce``, ``c10d::allreduce_``) are not kernels and
keep their kind's colour (until 2026-12 a substring rule painted them as communication kernels).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import polars as pl
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from profui.analysis.comm import comm_kernels
from profui.analysis.lod_open import open_lod
from profui.capture.format import open_trace_dir
from profui.tui.timeline.render import Renderer
from profui.tui.timeline.state import TimelineState

from realdata import shared_trace

TRACES = ("hta-nccl_parser_config-nccl_data.json.gz", "hta-trace_filter-sampled_rank-0.json.gz")


def _imported(name: str, out: Path) -> Path:
    profui = Path(sys.executable).with_name("profui")
    subprocess.run(
        [str(profui), "import", str(shared_trace(name)), "-o", str(out)], check=True, capture_output=True
    )
    return out


def _raw_kernel_names(trace: Path) -> dict[str, int]:
    """Each ``kernel`` event name of the trace's files and how many events carry it."""
    out: dict[str, int] = {}
    for f in open_trace_dir(trace).events:
        t = pq.read_table(f.path, columns=["kind", "name"])
        names = t.filter(pc.equal(t["kind"].cast("string"), "kernel"))["name"].cast("string").to_pylist()
        for n in names:
            out[n] = out.get(n, 0) + 1
    return out


@pytest.mark.parametrize("name", TRACES)
def test_the_comm_colour_is_the_comm_kernels(tmp_path: Path, name: str) -> None:
    trace = _imported(name, tmp_path / "t")
    ix = open_lod(trace)
    coloured = {n for n, c in zip(ix.names, Renderer(TimelineState(ix)).is_comm, strict=True) if c}
    events = pl.scan_parquet([f.path for f in open_trace_dir(trace).events]).with_columns(
        pl.col("kind").cast(pl.String), pl.col("name").cast(pl.String)
    )
    counted = set(comm_kernels(events).select("name").unique().collect()["name"])
    assert coloured == counted
    raw = _raw_kernel_names(trace)
    assert counted <= set(raw)  # every coloured name is a kernel's
    if name == TRACES[0]:  # the README: 21 NCCL kernels (AllReduce, Broadcast) on stream 40
        assert sum(raw[n] for n in coloured) == 21 and len(coloured) == 2
        assert {"nccl:all_reduce", "nccl:broadcast", "c10d::allreduce_"} <= set(ix.names)
        assert not coloured & {"nccl:all_reduce", "nccl:broadcast", "c10d::allreduce_"}
    else:  # 10 NCCL SendRecv kernels
        assert sum(raw[n] for n in coloured) == 10
