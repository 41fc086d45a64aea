"""The loading facade: open_trace / Trace.events / Trace.metrics; and the capture side's cached
Kineto import (resolve_trace), which the command line composes with it.

The tiny traces here are written with the trace-format writers (synthetic on purpose: they pin
down partition columns and schema handling, which the corpus cannot isolate).
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from profui.analysis import Trace, open_trace
from profui.capture.format import (
    Manifest,
    TraceFormatError,
    to_table,
    write_events,
    write_manifest,
    write_metrics,
)
from profui.capture.ingest.cache import resolve_trace


def _events(ts: list[int], kind: str = "kernel") -> object:
    n = len(ts)
    return to_table(
        "events",
        {
            "ts": ts,
            "dur": [10] * n,
            "kind": [kind] * n,
            "name": [f"k{i}" for i in range(n)],
            "pid": [0] * n,
            "tid": [0] * n,
            "device": [0] * n,
            "stream": [7] * n,
        },
    )


@pytest.fixture
def small_trace(tmp_path: Path) -> Path:
    d = tmp_path / "trace"
    write_manifest(d, Manifest(name="small", status="completed"))
    write_events(d, "hostA", 0, _events([100, 200]))
    write_events(d, "hostA", 0, _events([300]))
    write_events(d, "hostA", 1, _events([150]))
    write_events(d, "hostB", 3, _events([50, 60, 70]))
    write_metrics(
        d,
        "hostA",
        to_table(
            "metrics",
            {
                "ts": [1, 2],
                "source": ["cpu", "cpu"],
                "device": [-1, -1],
                "metric": ["util_pct"] * 2,
                "value": [10.0, 20.0],
            },
        ),
    )
    return d


def test_events_carry_node_and_rank_per_file(small_trace: Path) -> None:
    t = open_trace(small_trace)
    assert isinstance(t, Trace)
    df = t.events().collect()
    assert df.height == 7
    assert df.schema["node"] == pl.String and df.schema["rank"] == pl.Int64
    assert df.schema["ts"] == pl.Int64 and df.schema["kind"] == pl.String
    counts = dict(
        df.group_by("node", "rank")
        .len()
        .sort("node", "rank")
        .select(pl.concat_str("node", pl.lit("/"), pl.col("rank").cast(pl.String)), "len")
        .iter_rows()
    )
    assert counts == {"hostA/0": 3, "hostA/1": 1, "hostB/3": 3}
    assert sorted(df.filter(pl.col("node") == "hostA", pl.col("rank") == 0)["ts"].to_list()) == [
        100,
        200,
        300,
    ]


def test_projection_and_metrics(small_trace: Path) -> None:
    t = open_trace(small_trace)
    assert t.events().select("ts", "rank").collect().columns == ["ts", "rank"]
    m = t.metrics().collect()
    assert m["node"].to_list() == ["hostA", "hostA"] and m["value"].sum() == 30.0
    assert t.manifest.name == "small" and t.path == small_trace


def test_empty_running_trace_has_typed_empty_frames(tmp_path: Path) -> None:
    d = tmp_path / "running"
    write_manifest(d, Manifest(name="r", status="running"))
    t = open_trace(d)
    ev = t.events().collect()
    assert ev.height == 0 and "rank" in ev.columns and ev.schema["ts"] == pl.Int64


def test_bad_paths_raise_one_line_errors(tmp_path: Path) -> None:
    with pytest.raises(TraceFormatError, match="no such file"):
        open_trace(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(TraceFormatError, match="no manifest.json"):
        resolve_trace(tmp_path / "empty")
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(TraceFormatError, match="Kineto") as err:
        resolve_trace(tmp_path / "notes.txt")
    assert "\n" not in str(err.value)
    with pytest.raises(TraceFormatError, match="not a directory") as err:
        open_trace(tmp_path / "notes.txt")
    assert "\n" not in str(err.value)


def test_trace_dir_resolves_to_itself(small_trace: Path, tmp_path: Path) -> None:
    assert resolve_trace(small_trace, cache_root=tmp_path / "cache") == small_trace
    assert not (tmp_path / "cache").exists()


def test_kineto_json_is_imported_once_into_the_cache(tmp_path: Path) -> None:
    from realdata import shared_trace

    src = shared_trace("hta-trace_compare-base-base.json.gz")
    cache = tmp_path / "cache"
    lines: list[str] = []
    first = resolve_trace(src, progress=lines.append, cache_root=cache)
    assert first.parent == cache / "imports" and (first / "manifest.json").is_file()
    assert any("importing" in line for line in lines)
    mtime = (first / "manifest.json").stat().st_mtime_ns
    again = resolve_trace(src, progress=lines.append, cache_root=cache)
    assert again == first and (first / "manifest.json").stat().st_mtime_ns == mtime  # reused, not redone
    assert "using cached import" in lines[-1]
    t = open_trace(first)
    assert t.manifest.name == "hta-trace_compare-base-base"  # named after the file, not the cache key
    assert t.events().filter(pl.col("kind") == "kernel").select(pl.len()).collect().item() == 6
    assert list(cache.glob("imports/.*")) == []  # no temporary folders left behind


def test_folder_of_kineto_files_is_one_multirank_trace(tmp_path: Path) -> None:
    from realdata import shared_trace

    run = tmp_path / "run"
    run.mkdir()
    for r in (0, 1):
        name = f"hta-trace_filter-sampled_rank-{r}.json.gz"
        (run / name).write_bytes(shared_trace(name).read_bytes())
    t = open_trace(resolve_trace(run, cache_root=tmp_path / "cache"))
    assert t.manifest.name == "run"
    assert [r for _, r in t.dir.ranks] == [0, 1]
    assert sorted(t.events().select("rank").unique().collect()["rank"].to_list()) == [0, 1]


def test_open_trace_on_kineto_json_says_how_to_import_it(tmp_path: Path) -> None:
    from realdata import shared_trace

    src = shared_trace("hta-trace_compare-base-base.json.gz")
    with pytest.raises(TraceFormatError, match="profui import") as err:
        open_trace(src)
    assert "\n" not in str(err.value) and "import_trace" in str(err.value)
    run = tmp_path / "run"
    run.mkdir()
    (run / "rank-0.json.gz").write_bytes(src.read_bytes())
    with pytest.raises(TraceFormatError, match="profui import"):
        open_trace(run)
