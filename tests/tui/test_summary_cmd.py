"""``profui summary``: tables and JSON over real traces, Kineto JSON straight in, bad input.

Numbers are checked against the analysis functions (the CLI only formats) and, where HTA
computes the same thing, against HTA's reference numbers.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import polars as pl
import pytest

from profui.analysis import open_trace
from profui.analysis.busy import gpu_busy
from profui.analysis.launch import kernel_launches
from profui.analysis.summary import SECTIONS, summarize
from profui.capture.ingest import import_trace

from realdata import hta_reference, run_profui, same_numbers, shared_trace

NCCL = "hta-nccl_parser_config-nccl_data.json.gz"
TRITON = "hta-triton_example-triton_example.json.gz"


def profui(*args: str | Path, cache: Path | None = None) -> subprocess.CompletedProcess:
    return run_profui(*args, cache=cache)


@pytest.fixture(scope="module")
def nccl_trace(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("summary") / "nccl"
    import_trace([shared_trace(NCCL)], out)
    return out


@pytest.fixture(scope="module")
def two_ranks(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("summary") / "two"
    import_trace([shared_trace(f"hta-trace_filter-sampled_rank-{r}.json.gz") for r in (0, 1)], out)
    return out


def test_text_tables_hold_the_key_numbers(nccl_trace: Path) -> None:
    proc = profui("summary", nccl_trace)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    ev = open_trace(nccl_trace).events()
    busy = gpu_busy(ev).collect().row(0, named=True)
    # GPU busy % over the active span, as the analysis computes it
    assert f"{100 * busy['busy_share']:.1f}%" in out
    n_kernels = ev.filter(pl.col("kind") == "kernel").select(pl.len()).collect().item()
    assert f"{n_kernels:,} kernel launches of" in out
    n_launches = kernel_launches(ev).select(pl.len()).collect().item()
    assert f"{n_launches:,}" in out
    for title in (
        "Takeaways",
        "GPU busy / idle",
        "Top 15 kernels by time",
        "Memory operations",
        "Kernel precision",
        "Steps",
        "Launches",
        "Idle time per stream",
        "Launch queue length per stream (launched, not finished)",
        "Communication by collective",
        "Communication / computation overlap",
        "Annotations",
    ):
        assert title in out, title
    assert "46.8 ms" in out  # 15 AllReduce kernels: 46,762.159 µs (independent raw stats)
    assert "AllReduce" in out and "ncclKernel_AllReduce_RING_LL_Sum_float" in out
    assert "Traceback" not in proc.stderr
    # each of the summary's notes printed as its words, brackets included (not read as markup)
    for note in summarize(open_trace(nccl_trace)).notes:
        assert " ".join(f"note: {note}".split()) in " ".join(out.split()), note


def test_json_has_every_section_equal_to_summarize(nccl_trace: Path) -> None:
    proc = profui("summary", nccl_trace, "--json", "--top", "7")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert list(doc["sections"]) == list(SECTIONS)
    expected = json.loads(json.dumps(summarize(open_trace(nccl_trace), top_n=7).to_json_dict()))
    assert same_numbers(doc, expected)
    assert doc["params"] == {"top_n": 7, "bucket_ns": None, "hta_compat": False}
    assert len(doc["sections"]["kernels"]["top_by_time"]) == 8  # 7 + "(other)"
    for section, tables in doc["sections"].items():
        assert tables, section
    assert doc["sections"]["comm"]["by_collective"][0]["collective"] == "AllReduce"
    assert doc["takeaways"]["gpu_active"].startswith("GPU idle")


def test_sections_keep_the_named_ones_and_say_which_went(nccl_trace: Path) -> None:
    """The oracle: the whole document; the chosen sections are its own, the rest named in a note."""
    whole = json.loads(profui("summary", nccl_trace, "--json").stdout)
    proc = profui("summary", nccl_trace, "--json", "--sections", "steps, comm")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["sections"] == {k: whole["sections"][k] for k in ("steps", "comm")}
    assert {k: doc[k] for k in ("trace", "params", "takeaways")} == {
        k: whole[k] for k in ("trace", "params", "takeaways")
    }
    left = [k for k in whole["sections"] if k not in ("steps", "comm")]
    assert doc["notes"] == [*whole["notes"], f"sections left out (ask for them by name): {', '.join(left)}"]
    assert json.loads(profui("summary", nccl_trace, "--json", "--sections", "all").stdout) == whole
    none = json.loads(profui("summary", nccl_trace, "--json", "--sections", "").stdout)
    assert none["sections"] == {}


def test_hta_compat_and_bucket_options(nccl_trace: Path) -> None:
    proc = profui("summary", nccl_trace, "--json", "--hta-compat", "--bucket", "10")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["params"] == {"top_n": 15, "bucket_ns": 10_000_000, "hta_compat": True}
    lens = [r["bucket_len_ns"] for r in doc["sections"]["utilization"]["gpu"]]
    assert set(lens[:-1]) == {10_000_000} and 0 < lens[-1] <= 10_000_000  # the last one is clipped
    ref = hta_reference("hta-nccl_parser_config-nccl_data")
    launch = doc["sections"]["launch"]["overall"][0]
    assert launch["launches"] == ref["cuda_kernel_launch_stats"]["0"]["n_correlated_launches"]
    overlap = doc["sections"]["comm"]["overlap"][0]["overlap_share"]
    assert round(100 * overlap, 2) == ref["comm_comp_overlap"][0]["comp_comm_overlap_pctg"]


def test_two_rank_trace_reports_per_rank_and_straggler(two_ranks: Path) -> None:
    proc = profui("summary", two_ranks, "--json")
    doc = json.loads(proc.stdout)
    assert doc["trace"]["ranks"] == [0, 1]
    assert [r["rank"] for r in doc["sections"]["comm"]["per_rank"]] == [0, 1]
    st = doc["sections"]["comm"]["stragglers"]
    assert [r["step"] for r in st] == [551, 552] and all(r["ranks"] == 2 for r in st)
    text = profui("summary", two_ranks).stdout
    assert "Straggler per step (the rank that arrives last at the collectives)" in text


def test_kineto_json_directly_imported_into_cache(tmp_path: Path) -> None:
    src = tmp_path / "in" / TRITON
    src.parent.mkdir()
    src.write_bytes(shared_trace(TRITON).read_bytes())
    cache = tmp_path / "cache"
    first = profui("summary", src, "--json", cache=cache)
    assert first.returncode == 0, first.stderr
    doc = json.loads(first.stdout)
    imports = list((cache / "imports").iterdir())
    assert len(imports) == 1 and (imports[0] / "manifest.json").is_file()
    # the Triton kernel really is 1.76 µs, launched by a 47.8 µs cuLaunchKernel
    k = doc["sections"]["kernels"]["stats"]
    assert [(r["count"], r["total_ns"]) for r in k] == [(1, 1_760)]
    assert doc["sections"]["launch"]["overall"][0]["launch_bound"] == 1
    again = profui("summary", src, "--json", cache=cache)
    assert same_numbers(json.loads(again.stdout)["sections"], doc["sections"])
    assert list((cache / "imports").iterdir()) == imports  # reused, not imported again


@pytest.mark.parametrize(
    "args, words",
    [
        (("summary", "{tmp}/missing"), ("missing", "no such")),
        (("summary", "{tmp}/bad.json"), ("bad.json",)),
        (("summary", "{tmp}/notes.txt"), ("notes.txt",)),
        (("summary", "{trace}", "--top", "0"), ("--top",)),
        (("summary", "{trace}", "--bucket", "-5"), ("--bucket",)),
        (("summary", "{trace}", "--json", "--sections", "steps,kernel"), ("--sections 'kernel'", *SECTIONS)),
        (("summary", "{trace}", "--sections", "steps"), ("--sections", "--json")),
    ],
)
def test_bad_input_one_line_exit_2(tmp_path: Path, nccl_trace: Path, args, words) -> None:
    (tmp_path / "bad.json").write_text('{"traceEvents": [{"ph": "X", "na')
    (tmp_path / "notes.txt").write_text("hello")
    argv = [a.format(tmp=tmp_path, trace=nccl_trace) for a in args]
    proc = profui(*argv, cache=tmp_path / "cache")
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("profui: "), proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""
    for w in words:
        assert w in lines[0], lines[0]


def test_folder_of_kineto_files_is_one_multi_rank_trace(tmp_path: Path) -> None:
    """A folder holding one Kineto file per rank is imported as one 2-rank trace."""
    folder = tmp_path / "run"
    folder.mkdir()
    for r in (0, 1):
        name = f"hta-trace_filter-sampled_rank-{r}.json.gz"
        (folder / name).write_bytes(shared_trace(name).read_bytes())
    proc = profui("summary", folder, "--json", cache=tmp_path / "cache")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["trace"]["ranks"] == [0, 1]
    got = {r["rank"]: 100 * r["overlap_share"] for r in doc["sections"]["comm"]["overlap"]}
    for r in (0, 1):  # exact overlap over each rank's whole trace (independent raw stats)
        raw = next(
            iter(hta_reference(f"hta-trace_filter-sampled_rank-{r}")["independent_raw_stats"].values())
        )
        assert round(got[r], 3) == raw["comm_comp_overlap_pct_of_comm_busy"]
    assert [r["count"] for r in doc["sections"]["comm"]["per_rank"]] == [10, 10]


def test_takeaways_print_the_names_they_quote(tmp_path: Path) -> None:
    """A takeaway quotes an annotation named in square brackets ('[param|...|forward]', the cupti
    trace's): the text and Markdown summaries print every takeaway as ``--json`` has it, not the
    brackets read as rich markup (which printed '' in their place)."""
    trace = tmp_path / "cupti"
    import_trace([shared_trace("hta-cupti_profiler-benchmark_result_924719_1679055439_trace.json.gz")], trace)
    doc = json.loads(profui("summary", trace, "--json", cache=tmp_path).stdout)
    quoted = [t for t in doc["takeaways"].values() if "[param|" in t]
    assert quoted, doc["takeaways"]  # the case this test is for
    text = run_profui("summary", trace, cache=tmp_path, COLUMNS="400").stdout
    markdown = run_profui("summary", trace, "--format", "markdown", cache=tmp_path).stdout
    unescaped = markdown.replace("\\", "")  # Markdown escapes [ ] | _ with a backslash
    for takeaway in doc["takeaways"].values():
        assert " ".join(takeaway.split()) in " ".join(text.split()), takeaway
        assert takeaway in unescaped, takeaway


def test_device_annotations_alone_are_no_device_work(tmp_path: Path) -> None:
    """HTA's cupti trace lists 8 A100s, and its only events on a device are 77 CUPTI profiler
    ranges (gpu_annotation) on device 0: no kernel, copy or memset. No GPU ran traced work, so
    the overview counts none ('0 of 8 GPUs active', not '1 of 8'), and no finding tells the user
    to shorten kernels. Oracle: the raw events' kinds by device."""
    trace = tmp_path / "cupti"
    import_trace([shared_trace("hta-cupti_profiler-benchmark_result_924719_1679055439_trace.json.gz")], trace)
    ev = open_trace(trace).events().collect()
    on_device = ev.filter(pl.col("device") >= 0)
    assert on_device.height and set(on_device["kind"].unique()) == {"gpu_annotation"}  # the case
    doc = json.loads(profui("summary", trace, "--json", cache=tmp_path).stdout)
    assert (doc["trace"]["gpus"], doc["trace"]["devices"], doc["trace"]["device_type"]) == (0, 0, "none")
    text = run_profui("summary", trace, cache=tmp_path, COLUMNS="200").stdout
    assert "0 of 8 GPUs active" in text and "1 of 8" not in text
    explained = json.loads(profui("explain", trace, "--json", cache=tmp_path).stdout)
    words = json.dumps(explained["findings"]).lower()
    assert explained["findings"] and "kernel" not in words, words
    # the rank's steps are its host's work, as a rank without device work's are; the surfaces of
    # device work say none was traced, not that the run had no GPU (it listed 8)
    breakdown = doc["sections"]["steps"]["breakdown"]
    assert breakdown and {r["work_on"] for r in breakdown} == {"host"}
    assert all(r["computation_ns"] + r["idle_ns"] == r["dur_ns"] for r in breakdown)
    assert doc["takeaways"]["gpu_active"].startswith("Does not apply: no device work was traced")
    assert "CPU-only" not in json.dumps(doc["takeaways"])
