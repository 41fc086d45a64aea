"""Every real Kineto trace in the shared corpus imports, with counts and time span checked
against the raw JSON.

The expected numbers are computed here, independently of the converter: stdlib ``json`` with
``Decimal`` numbers, counting categories by the mapping the trace format documents
(``DESIGN.md``: cat -> kind), and exact integer-ns arithmetic.
"""

from __future__ import annotations

import gzip
import json
import shutil
from collections import Counter
from decimal import Decimal
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from profui.capture.conversion.errors import KinetoFormatError
from profui.capture.format import open_trace_dir
from profui.capture.ingest import import_trace
from profui.capture.kineto.file_import import convert_kineto_file

from realdata import shared_trace

KINETO_TRACES = [
    "hta-amd_trace-mi250_minitoy_train_ROCm6_2_kineto.json.gz",
    "hta-call_stack-backward_thread.json",
    "hta-cpu_only-rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz",
    "hta-critical_path-cuda_event_sync_multi_stream-event_sync_trace.json.gz",
    "hta-critical_path-simple_add-benchmark_result_493459_1694039959_trace.json.gz",
    "hta-cupti_profiler-benchmark_result_924719_1679055439_trace.json.gz",
    "hta-df_index_resolver-df_index_resolver.json.gz",
    "hta-distributed_info_unavailable-distributed_info_not_found.json.gz",
    "hta-execution_trace-benchmark_simple_add_trace.json.gz",
    "hta-mtia_inference_trace-mtia_inference_rank_0.json.gz",
    "hta-mtia_trace_single_rank-mtia_rank_0.json.gz",
    "hta-nccl_parser_config-nccl_data.json.gz",
    "hta-ns_resolution_trace-rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz",
    "hta-rank_non_gpu-rank_non_gpu.json.gz",
    "hta-rank_unavailable-rank_not_found.json.gz",
    "hta-trace_compare-base-base.json.gz",
    "hta-trace_file_list-inference_rank_1.json.gz",
    "hta-trace_filter-sampled_rank-0.json.gz",
    "hta-trace_filter-sampled_rank-1.json.gz",
    "hta-triton_example-triton_example.json.gz",
]

# The documented mapping of Kineto categories onto profui kinds (restated here on purpose).
CAT_KIND = {
    "cpu_op": "cpu_op",
    "python_function": "python",
    "user_annotation": "annotation",
    "gpu_user_annotation": "gpu_annotation",
    "cuda_profiler_range": "gpu_annotation",
    "cuda_runtime": "runtime",
    "Runtime": "runtime",
    "mtia_runtime": "runtime",
    "cuda_driver": "driver",
    "kernel": "kernel",
    "Kernel": "kernel",
    "mtia_ccp_events": "kernel",
    "gpu_memcpy": "memcpy",
    "gpu_memset": "memset",
    "cuda_sync": "sync",
}
DEVICE_KINDS = {"kernel", "memcpy", "memset", "sync", "gpu_annotation"}


def load_raw(path: Path) -> dict:
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return json.loads(data, parse_float=Decimal)


def expected_kind(ev: dict) -> str | None:
    """profui kind of one raw event, or None when it does not become a row."""
    ph, cat = ev.get("ph"), ev.get("cat")
    if ph in ("i", "I"):
        return "instant" if cat is not None else None
    if ph != "X" or cat == "Trace":
        return None
    kind = CAT_KIND[cat]
    if kind == "annotation" and ev["name"].startswith("ProfilerStep#"):
        return "step"
    if cat == "mtia_ccp_events" and "direction" in (ev.get("args") or {}):
        return "memcpy"  # MTIA DMA transfers
    return kind


def expected(path: Path) -> dict:
    """Counts per kind, per (device, kind) and the exact ns time span, straight from the JSON."""
    doc = load_raw(path)
    base = doc.get("baseTimeNanoseconds")
    kinds: Counter = Counter()
    per_device: Counter = Counter()
    first = last = None
    for ev in doc["traceEvents"]:
        kind = expected_kind(ev)
        if kind is None:
            continue
        kinds[kind] += 1
        if kind in DEVICE_KINDS:
            dev = (ev.get("args") or {}).get("device", ev["pid"])
            per_device[(int(dev), kind)] += 1
        ts = int(Decimal(ev["ts"]) * 1000)
        if base is not None and ts < 10**17:  # relative to baseTimeNanoseconds
            ts += int(base)
        end = ts + (int(Decimal(ev.get("dur", 0)) * 1000) if ev["ph"] == "X" else 0)
        first = ts if first is None else min(first, ts)
        last = end if last is None else max(last, end)
    return {"kinds": dict(kinds), "per_device": dict(per_device), "first": first, "last": last}


@pytest.fixture(scope="session")
def imported(tmp_path_factory):
    """Import each shared trace at most once per session; returns name -> (trace dir, table)."""
    cache: dict[str, tuple[Path, object]] = {}

    def get(name: str):
        if name not in cache:
            src = shared_trace(name)
            out = tmp_path_factory.mktemp("kineto") / "trace"
            import_trace([src], out)
            trace = open_trace_dir(out)
            table = pq.read_table([f.path for f in trace.events][0])
            cache[name] = (out, table)
        return cache[name]

    return get


@pytest.mark.parametrize("name", KINETO_TRACES)
def test_counts_and_span_match_raw_json(name: str, imported) -> None:
    out, table = imported(name)
    want = expected(shared_trace(name))
    rows = table.select(["kind", "device", "ts", "dur"]).to_pydict()
    got_kinds = Counter(rows["kind"])
    assert dict(got_kinds) == want["kinds"]
    got_dev = Counter((d, k) for d, k in zip(rows["device"], rows["kind"], strict=True) if k in DEVICE_KINDS)
    assert dict(got_dev) == want["per_device"]
    # host kinds are never put on a device
    assert all(d == -1 for d, k in zip(rows["device"], rows["kind"], strict=True) if k not in DEVICE_KINDS)
    first = min(rows["ts"])
    last = max(t + d for t, d in zip(rows["ts"], rows["dur"], strict=True))
    assert (first, last) == (want["first"], want["last"])
    manifest = open_trace_dir(out).manifest
    assert (manifest.start_ns, manifest.end_ns) == (want["first"], want["last"])
    assert manifest.status == "imported" and manifest.source == "kineto-import"
    assert manifest.sources[0]["counts"] == dict(sorted(want["kinds"].items()))


def test_ns_digits_kept_exactly(imported) -> None:
    """Absolute float µs with ns digits (1712195495519689.047) become exact int64 ns."""
    name = "hta-ns_resolution_trace-rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"
    _, table = imported(name)
    doc = load_raw(shared_trace(name))
    raw = sorted(
        (int(Decimal(e["ts"]) * 1000), int(Decimal(e["dur"]) * 1000), e["name"])
        for e in doc["traceEvents"]
        if expected_kind(e) is not None
    )
    cols = table.select(["ts", "dur", "name"]).to_pydict()
    got = sorted(zip(cols["ts"], cols["dur"], cols["name"], strict=True))
    assert got == raw
    # the point of the exercise: most timestamps have sub-microsecond digits a float64 would lose
    with_ns = sum(1 for t, _, _ in raw if t % 1000)
    assert with_ns > len(raw) // 2
    lossy = sum(1 for t, _, _ in raw if int(float(Decimal(t) / 1000) * 1000) != t)
    assert lossy > 0


def test_correlation_and_external_ids_kept(imported) -> None:
    """CPU op -> launch -> kernel links survive: ids equal the raw args, kernels find launches."""
    name = "hta-nccl_parser_config-nccl_data.json.gz"
    _, table = imported(name)
    doc = load_raw(shared_trace(name))
    raw_kernel_corr = Counter(
        e["args"]["correlation"] for e in doc["traceEvents"] if e.get("cat") == "kernel"
    )
    raw_kernel_ext = Counter(e["args"]["External id"] for e in doc["traceEvents"] if e.get("cat") == "kernel")
    cols = table.select(["kind", "correlation", "external_id"]).to_pydict()
    kernels = [i for i, k in enumerate(cols["kind"]) if k == "kernel"]
    assert Counter(cols["correlation"][i] for i in kernels) == raw_kernel_corr
    assert Counter(cols["external_id"][i] for i in kernels) == raw_kernel_ext
    runtime_corr = {c for c, k in zip(cols["correlation"], cols["kind"], strict=True) if k == "runtime"}
    assert {cols["correlation"][i] for i in kernels} <= runtime_corr


def test_args_are_lossless(imported) -> None:
    """Each row's args JSON plus its promoted columns give back the raw event's args exactly."""
    name = "hta-critical_path-simple_add-benchmark_result_493459_1694039959_trace.json.gz"
    _, table = imported(name)
    doc = load_raw(shared_trace(name))
    promoted = {
        "device": "device",
        "stream": "stream",
        "correlation": "correlation",
        "external_id": "External id",
        "bytes": "bytes",
    }
    want = Counter()
    for e in doc["traceEvents"]:
        if expected_kind(e) is not None:
            want[
                (
                    int(e["ts"]) * 1000,
                    e["name"],
                    json.dumps(e.get("args") or {}, sort_keys=True, default=float),
                )
            ] += 1
    got = Counter()
    for row in table.to_pylist():
        args = json.loads(row["args"]) if row["args"] else {}
        for col, key in promoted.items():
            if row["kind"] in DEVICE_KINDS or col in ("correlation", "external_id"):
                if row[col] is not None and not (
                    col in ("device", "stream") and row["kind"] not in DEVICE_KINDS
                ):
                    args.setdefault(key, row[col])
        got[(row["ts"], row["name"], json.dumps(args, sort_keys=True, default=str))] += 1
    assert got == want


def test_memory_instants_keep_their_args(imported) -> None:
    _, table = imported("hta-df_index_resolver-df_index_resolver.json.gz")
    doc = load_raw(shared_trace("hta-df_index_resolver-df_index_resolver.json.gz"))
    raw_bytes = sum(e["args"]["Bytes"] for e in doc["traceEvents"] if e.get("name") == "[memory]")
    rows = [r for r in table.select(["kind", "name", "args"]).to_pylist() if r["kind"] == "instant"]
    assert all(r["name"] == "[memory]" for r in rows)
    assert sum(json.loads(r["args"])["Bytes"] for r in rows) == raw_bytes
    assert all("Total Allocated" in json.loads(r["args"]) for r in rows)


def test_memcpy_bytes_and_direction(imported) -> None:
    """CUDA memcpy kinds come from the name; AMD's from args.kind, with bytes from the hip call."""
    name = "hta-df_index_resolver-df_index_resolver.json.gz"
    _, table = imported(name)
    doc = load_raw(shared_trace(name))
    want = Counter(
        (e["name"].split()[1], e["args"]["bytes"]) for e in doc["traceEvents"] if e.get("cat") == "gpu_memcpy"
    )
    rows = table.select(["kind", "memcpy_kind", "bytes"]).to_pydict()
    got = Counter(
        (m, b)
        for k, m, b in zip(rows["kind"], rows["memcpy_kind"], rows["bytes"], strict=True)
        if k == "memcpy"
    )
    assert got == want

    amd = "hta-amd_trace-mi250_minitoy_train_ROCm6_2_kineto.json.gz"
    _, amd_table = imported(amd)
    amd_doc = load_raw(shared_trace(amd))
    size_by_corr = {
        e["args"]["correlation"]: int(e["args"]["size"])
        for e in amd_doc["traceEvents"]
        if e.get("cat") == "cuda_runtime" and "size" in e.get("args", {})
    }
    want_amd = sorted(
        ("HtoD", size_by_corr[e["args"]["correlation"]])
        for e in amd_doc["traceEvents"]
        if e.get("cat") == "gpu_memcpy"
    )
    rows = [
        r
        for r in amd_table.select(["kind", "memcpy_kind", "bytes", "stream"]).to_pylist()
        if r["kind"] == "memcpy"
    ]
    assert sorted((r["memcpy_kind"], r["bytes"]) for r in rows) == want_amd
    assert {r["stream"] for r in rows} == {0}


def test_old_format_and_driver_and_sync(imported) -> None:
    """Old 'Kernel'/'Runtime'/'external id'; cuda_driver launches; cuda_sync kinds."""
    _, old = imported("hta-trace_file_list-inference_rank_1.json.gz")
    rows = old.to_pylist()
    kernels = [r for r in rows if r["kind"] == "kernel"]
    assert kernels and all(r["external_id"] is not None and r["correlation"] is not None for r in kernels)
    assert all(json.loads(r["args"])["cat"] == "Kernel" for r in kernels)
    _, triton = imported("hta-triton_example-triton_example.json.gz")
    drivers = [r for r in triton.to_pylist() if r["kind"] == "driver"]
    kernel = [r for r in triton.to_pylist() if r["kind"] == "kernel"]
    assert [d["name"] for d in drivers] == ["cuLaunchKernel"]
    assert drivers[0]["correlation"] == kernel[0]["correlation"]
    _, sync = imported("hta-critical_path-cuda_event_sync_multi_stream-event_sync_trace.json.gz")
    syncs = [r for r in sync.to_pylist() if r["kind"] == "sync"]
    assert sorted({r["name"] for r in syncs}) == sorted(
        {
            e["name"]
            for e in load_raw(
                shared_trace("hta-critical_path-cuda_event_sync_multi_stream-event_sync_trace.json.gz")
            )["traceEvents"]
            if e.get("cat") == "cuda_sync"
        }
    )
    assert all("cuda_sync_kind" in json.loads(r["args"]) for r in syncs)


def test_metadata_kept(imported) -> None:
    """Trace-level metadata and M-event names go into the Parquet metadata and the manifest."""
    name = "hta-nccl_parser_config-nccl_data.json.gz"
    out, _ = imported(name)
    trace = open_trace_dir(out)
    meta = pq.read_metadata(trace.events[0].path).metadata
    source = json.loads(meta[b"profui.source"])
    raw = load_raw(shared_trace(name))
    assert source["metadata"]["distributedInfo"] == json.loads(json.dumps(raw["distributedInfo"]))
    names = {e["args"]["name"] for e in raw["traceEvents"] if e.get("name") == "process_name"}
    assert {p["name"] for p in source["processes"].values() if "name" in p} == names
    assert [s["name"] for s in source["profiler_spans"]] == [
        e["name"] for e in raw["traceEvents"] if e.get("cat") == "Trace"
    ]
    assert source["flows"]["ac2g:s"] == sum(
        1 for e in raw["traceEvents"] if e.get("cat") == "ac2g" and e["ph"] == "s"
    )
    assert trace.manifest.gpus[0]["name"] == raw["deviceProperties"][0]["name"]
    assert trace.manifest.sources[0]["metadata"]["distributedInfo"]["nccl_version"] == "2.17.1"


def test_rank_and_node_detection(tmp_path: Path) -> None:
    no_info = shared_trace("hta-distributed_info_unavailable-distributed_info_not_found.json.gz")
    # distributedInfo wins
    m = import_trace([shared_trace("hta-df_index_resolver-df_index_resolver.json.gz")], tmp_path / "a")
    assert m.ranks == [1]
    # no distributedInfo: the file name
    named = tmp_path / "job_rank-7.json.gz"
    shutil.copyfile(no_info, named)
    assert import_trace([named], tmp_path / "b").ranks == [7]
    # nothing in the trace or its name: --rank, else 0
    assert import_trace([no_info], tmp_path / "c", rank=5).ranks == [5]
    assert import_trace([no_info], tmp_path / "d").ranks == [0]
    # distributedInfo without a rank key
    assert import_trace(
        [shared_trace("hta-rank_unavailable-rank_not_found.json.gz")], tmp_path / "e"
    ).ranks == [0]
    # node: --node, else the trace's host_name, else the file stem
    ns = shared_trace("hta-ns_resolution_trace-rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz")
    assert import_trace([named], tmp_path / "f", node="gpu-box").hosts == ["gpu-box"]
    assert import_trace([named], tmp_path / "g").hosts == ["job_rank-7"]
    trace = open_trace_dir(tmp_path / "f")
    assert [(f.node, f.rank) for f in trace.events] == [("gpu-box", 7)]
    res = convert_kineto_file(ns, tmp_path / "a", seq=3)
    assert res.node == "twshared39868.02.pnb3.facebook.com" and res.rank == 0
    assert res.path.name == "events-00003.parquet" and res.devices == [0]


def test_multi_rank_folder_import(tmp_path: Path) -> None:
    folder = tmp_path / "job"
    folder.mkdir()
    for r in (0, 1):
        shutil.copyfile(
            shared_trace(f"hta-trace_filter-sampled_rank-{r}.json.gz"), folder / f"sampled_rank-{r}.json.gz"
        )
    m = import_trace([folder], tmp_path / "out", node="n1")
    assert m.ranks == [0, 1] and m.hosts == ["n1"]
    trace = open_trace_dir(tmp_path / "out")
    assert [(f.node, f.rank) for f in trace.events] == [("n1", 0), ("n1", 1)]
    want = [
        sum(expected(shared_trace(f"hta-trace_filter-sampled_rank-{r}.json.gz"))["kinds"].values())
        for r in (0, 1)
    ]
    assert [f.num_rows for f in trace.events] == want


@pytest.mark.parametrize(
    ("name", "says"),
    [
        ("hta-execution_trace-benchmark_simple_add_et.json.gz", "execution trace"),
        ("hta-memory_analysis-memory_timeline.raw.gz", "memory timeline"),
    ],
)
def test_non_kineto_files_refused(name: str, says: str, tmp_path: Path) -> None:
    src = shared_trace(name)
    with pytest.raises(KinetoFormatError) as err:
        import_trace([src], tmp_path / "out")
    msg = str(err.value)
    assert says in msg and str(src) in msg and "\n" not in msg
    assert not (tmp_path / "out").exists()
    assert list(tmp_path.iterdir()) == []  # no temporary folder left behind


def test_progress_is_reported(tmp_path: Path) -> None:
    calls: list[tuple[int, int]] = []
    src = shared_trace("hta-nccl_parser_config-nccl_data.json.gz")
    import_trace([src], tmp_path / "out", progress=lambda d, t: calls.append((d, t)))
    assert calls and calls[-1][0] == calls[-1][1] == src.stat().st_size
    assert [d for d, _ in calls] == sorted(d for d, _ in calls)


def test_multi_member_gzip(tmp_path: Path) -> None:
    """A .json.gz made of two gzip members (e.g. written by concatenation) reads as one file."""
    name = "hta-trace_compare-base-base.json.gz"
    text = gzip.decompress(shared_trace(name).read_bytes())
    src = tmp_path / "two_members.json.gz"
    half = len(text) // 2
    src.write_bytes(gzip.compress(text[:half]) + gzip.compress(text[half:]))
    m = import_trace([src], tmp_path / "out")
    assert m.sources[0]["counts"] == dict(sorted(expected(shared_trace(name))["kinds"].items()))


def test_flow_links_kept_compactly_and_exactly(imported) -> None:
    """fwdbwd flows (forward op -> its backward op) survive in the file metadata, times exact."""
    name = "hta-nccl_parser_config-nccl_data.json.gz"
    out, _ = imported(name)
    meta = pq.read_metadata(open_trace_dir(out).events[0].path).metadata
    links = json.loads(meta[b"profui.source"])["flow_links"]["fwdbwd"]
    raw = load_raw(shared_trace(name))
    base = int(raw.get("baseTimeNanoseconds", 0))
    expected = sorted(
        (e["id"], e["ph"], base + int(Decimal(str(e["ts"])) * 1000))
        for e in raw["traceEvents"]
        if e.get("cat") == "fwdbwd"
    )
    got = sorted(
        (i, ph, links["ts0_ns"] + off)
        for i, ph, off in zip(links["id"], links["ph"], links["ts_offset_ns"], strict=True)
    )
    assert len(got) == len(expected) > 0
    assert got == expected
