"""``profui diff`` and its gate on real pairs: the two Nsight exports of one training before and
after a change (numbers from ``nsys/reference/``), and CPU training runs recorded here with
torch.profiler that differ in one known way (batch size; an extra matmul in the model), which
the diff must name first. An identical pair gives "no significant change"."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from profui.analysis.diff import JSON_DOC, normalise_name

from realdata import SAMPLES, nsys_export, traces_dir

PROFUI = str(Path(sys.executable).with_name("profui"))

RECORD = """
import sys
sys.path.insert(0, sys.argv[4])
import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile, schedule
import train_mlp

out, batch, extra = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"
make = train_mlp.make_model


class Extra(nn.Module):  # one more matmul per forward: x @ W, W square
    def __init__(self, features):
        super().__init__()
        self.w = nn.Parameter(torch.eye(features))
        self.net = make(features)

    def forward(self, x):
        return self.net(torch.matmul(x, self.w))


if extra:
    train_mlp.make_model = lambda features=32, hidden=64: Extra(features)
torch.set_num_threads(1)
with profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=1, warmup=1, active=10),
             on_trace_ready=lambda p: p.export_chrome_trace(out)) as prof:
    train_mlp.train(steps=13, batch=batch, on_step=lambda i, loss: prof.step())
"""


def _profui(*args: str | Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [PROFUI, *map(str, args)],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        stdin=subprocess.DEVNULL,
    )


def _record(out: Path, batch: int, extra: bool = False) -> Path:
    proc = subprocess.run(
        [sys.executable, "-c", RECORD, str(out), str(batch), "1" if extra else "0", str(SAMPLES)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    pytest.importorskip("torch")
    d = tmp_path_factory.mktemp("diffruns")
    return {
        "base": _record(d / "base.json", 64),
        "batch": _record(d / "batch.json", 2048),
        "matmul": _record(d / "matmul.json", 64, extra=True),
    }


@pytest.fixture
def cache(tmp_path) -> dict[str, str]:
    return {**os.environ, "PROFUI_CACHE": str(tmp_path / "cache")}


@pytest.fixture(scope="module")
def mlp(tmp_path_factory) -> Path:
    """The CPU sample, copied: a diff records its analysis inside the trace folder."""
    import shutil

    out = tmp_path_factory.mktemp("mlp") / "mlp_cpu"
    shutil.copytree(SAMPLES / "mlp_cpu", out, ignore=shutil.ignore_patterns(".profui"))
    return out


def _diff(*args: str | Path, env=None) -> tuple[subprocess.CompletedProcess, dict | None]:
    proc = _profui("diff", *args, "--json", env=env)
    return proc, (json.loads(proc.stdout) if proc.returncode in (0, 1) else None)


def test_nsys_before_after(cache) -> None:
    before, after = nsys_export("mfu_2gpu_before"), nsys_export("mfu_2gpu_after")
    proc, res = _diff(before, after, env=cache)
    assert proc.returncode == 0, proc.stderr
    refs = [json.loads((traces_dir() / "nsys" / "reference" / f"{n}.json").read_text())["per_device"]
            for n in ("mfu_2gpu_before", "mfu_2gpu_after")]  # fmt: skip
    idle = [sum(d["idle_ns"] for d in r.values()) / sum(d["span_ns"] for d in r.values()) for r in refs]
    m = res["metrics"]["idle_pct"]
    assert m["base"] == pytest.approx(idle[0], rel=1e-12) and m["new"] == pytest.approx(idle[1], rel=1e-12)
    assert m["verdict"] == "regression" and res["verdict"] == "regression"
    regressions = [n for n in res["headline"] if res["metrics"][n]["verdict"] == "regression"]
    assert (
        "idle_pct" in regressions and res["headline"][: len(regressions)] == regressions
    )  # regressions first
    # neither export has step markers: no step time is compared, and the diff says so
    assert "step_p50" not in res["metrics"] and res["notes"] == [
        "no step markers in either trace: step time is not compared"
    ]
    # kernels matched by name across the pair: their counts are the exports' own
    counts = []
    for src in (before, after):
        conn = sqlite3.connect(f"file:{src}?mode=ro", uri=True)
        counts.append(dict(conn.execute(
            "SELECT s.value, COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.demangledName GROUP BY 1"
        ).fetchall()))  # fmt: skip
        conn.close()
    for row in res["kernels"]:
        raw_b = sum(n for k, n in counts[0].items() if normalise_name(k) == row["name"])
        raw_a = sum(n for k, n in counts[1].items() if normalise_name(k) == row["name"])
        assert (row["base_count"], row["new_count"]) == (raw_b, raw_a)
        assert row["status"] == ("both" if raw_b and raw_a else "new" if raw_a else "gone")


def test_nvtx_op_ids_do_not_make_every_range_new() -> None:
    # the names nsys-ai lists as both new and gone on this pair
    assert normalise_name("AllToAll4D, seq = 46308, op_id = 994284") == "AllToAll4D"
    assert normalise_name("aten::view, op_id = 314290") == "aten::view"
    assert normalise_name("ProfilerStep#41") == "ProfilerStep#N"
    assert normalise_name("void k<(int)4>(T*) at 0x7f3a2c00") == "void k<(int)4>(T*) at 0x…"


def test_identical_pair_is_no_significant_change(cache, mlp) -> None:
    proc, res = _diff(mlp, mlp, env=cache)
    assert proc.returncode == 0
    assert res["verdict"] == "no significant change" and res["headline"] == []
    assert res["metrics"]["step_p50"]["significant"] is False
    text = _profui("diff", mlp, mlp, env=cache).stdout
    assert "no significant change" in text.splitlines()[0]


def test_a_bigger_batch_is_named_first(runs, cache) -> None:
    proc, res = _diff(runs["base"], runs["batch"], env=cache)
    assert proc.returncode == 0, proc.stderr
    assert res["headline"][0] == "step_p50"
    m = res["metrics"]["step_p50"]
    assert m["significant"] is True and m["verdict"] == "regression" and m["ci95"][0] > 0
    assert [s["step"] for s in res["steps"]] == list(range(2, 12))  # aligned by step number


def test_an_extra_matmul_is_marked_new(runs, cache) -> None:
    proc, res = _diff(runs["base"], runs["matmul"], "--top", "0", env=cache)
    assert proc.returncode == 0, proc.stderr
    # ranked by the size of the change of time (#37: a new name is not first for being new)
    sizes = [abs(r["delta_ns"]) for r in res["ops"]]
    assert sizes == sorted(sizes, reverse=True)
    new = next(r for r in res["ops"] if r["name"] == "aten::matmul")  # the model's own change
    assert (new["status"], new["base_count"], new["new_count"]) == ("new", 0, 10)
    mm = next(r for r in res["ops"] if r["name"] == "aten::mm")
    assert mm["new_count"] - mm["base_count"] == 3 * 10  # x @ W, and its two gradients, per step


def test_gate_exit_codes_and_lines(runs, cache) -> None:
    proc = _profui(
        "diff",
        runs["base"],
        runs["batch"],
        "--fail-if",
        "step_p50>+5%",
        "--fail-if",
        "step_p50>+10000%",
        env=cache,
    )
    assert proc.returncode == 1
    lines = proc.stderr.splitlines()
    assert (
        len(lines) == 1
        and lines[0].startswith("profui: gate: step_p50 changed +")
        and "breaks step_p50>+5%" in lines[0]
    )
    proc = _profui("diff", runs["base"], runs["batch"], "--fail-if", "step_p50>+10000%", env=cache)
    assert proc.returncode == 0 and proc.stderr == ""
    proc, res = _diff(runs["base"], runs["batch"], "--fail-if", "step_p50>+5%", env=cache)
    gate = res["gate"]
    assert proc.returncode == 1 and gate["passed"] is False and gate["conditions"][0]["broken"] is True


@pytest.mark.parametrize(
    ("cond", "words"),
    [
        ("step_p50>>5%", "bad --fail-if"),
        ("nope>+5%", "nope is not in both traces"),
        ("step_p50>+3pt", "'pt' is for shares"),
        ("step_p50>+3", "give step_p50's change a unit"),
    ],
)
def test_gate_bad_conditions_are_bad_input(cond: str, words: str, cache, mlp) -> None:
    proc = _profui("diff", mlp, mlp, "--fail-if", cond, env=cache)
    assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1 and words in proc.stderr, proc.stderr


def test_named_baseline(runs, cache) -> None:
    proc = _profui("diff", "--save-baseline", "main", runs["base"], env=cache)
    assert proc.returncode == 0 and "saved baseline main" in proc.stdout
    by_name, res = _diff("main", runs["batch"], env=cache)
    by_path, ref = _diff(runs["base"], runs["batch"], env=cache)
    assert by_name.returncode == by_path.returncode == 0
    assert res["metrics"] == ref["metrics"] and res["headline"] == ref["headline"]
    proc = _profui("diff", "baseline:nope", runs["batch"], env=cache)
    assert proc.returncode == 2 and "no such trace or baseline" in proc.stderr


def _md_table(src: str, title: str) -> tuple[list[str], list[list[str]]]:
    """The header and rows (cell texts) of the pipe table right under the bold ``title``,
    read back with markdown-it (GFM tables)."""
    from markdown_it import MarkdownIt

    toks = MarkdownIt("commonmark").enable("table").parse(src)
    at = next(i for i, t in enumerate(toks) if t.type == "inline" and t.content == f"**{title}**")
    assert toks[at + 2].type == "table_open", title
    cells: list[list[str]] = []
    for t in toks[at + 3 :]:
        if t.type == "table_close":
            break
        if t.type == "tr_open":
            cells.append([])
        elif t.type == "inline":
            cells[-1].append(t.content)
    return cells[0], cells[1:]


def test_a_baseline_is_called_by_its_name(runs, cache) -> None:
    """On a CI runner the baseline was saved from ``trace/`` and the new run is ``trace/``: the
    report names the baseline as the reader gave it, ``main (baseline) → NEW``, in the text and
    the Markdown; the trace it was saved from stays its ``folder``."""
    assert _profui("diff", "--save-baseline", "main", runs["base"], env=cache).returncode == 0
    new = str(runs["batch"])
    _, ref = _diff(runs["base"], new, env=cache)
    for spec in ("main", "baseline:main"):
        proc, res = _diff(spec, new, env=cache)
        assert proc.returncode == 0, proc.stderr
        assert res["base"]["path"] == "main (baseline)" and res["new"]["path"] == new
        assert res["base"]["folder"] == ref["base"]["folder"]
        text = _profui("diff", spec, new, env=cache).stdout.splitlines()[0]
        assert text.startswith(f"main (baseline) → {new}: "), text
    md = _profui("diff", "main", new, "--format", "markdown", env=cache).stdout
    assert md.startswith("**main (baseline) → "), md[:200]


def test_the_steps_that_changed_most_are_a_table(runs, cache) -> None:
    """The five steps whose time changed most (by |new - base| of the JSON's aligned steps) are a
    table, in the text and the Markdown; no table has a column empty on every row (every host op
    is in both runs: no "in" column)."""
    from profui.analysis.formatting import fmt_ns

    base, new = runs["base"], runs["batch"]
    _, res = _diff(base, new, env=cache)
    want = sorted(res["steps"], key=lambda s: -abs(s["new_ns"] - s["base_ns"]))[:5]
    assert len(want) == 5
    md = _profui("diff", base, new, "--format", "markdown", env=cache).stdout
    header, rows = _md_table(md, "Steps by change (aligned by step number)")
    assert header == ["step", "base", "new", "change"]
    assert [r[0] for r in rows] == [str(s["step"]) for s in want]
    assert [r[1:3] for r in rows] == [[fmt_ns(s["base_ns"]), fmt_ns(s["new_ns"])] for s in want]
    text = _profui("diff", base, new, env={**cache, "COLUMNS": "1000"}).stdout
    boxed = [[c.strip() for c in ln.split("│")[1:-1]] for ln in text.splitlines() if ln.startswith("│")]
    assert [r[:3] for r in rows] == [b[:3] for b in boxed if b and b[0] in {r[0] for r in rows}][:5]
    assert all(r["status"] == "both" for r in res["ops"])
    header, rows = _md_table(md, "Host ops by change of total time")
    assert "in" not in header and all(any(r[i] for r in rows) for i in range(len(header)))
    assert "┃ in ┃" not in text


def test_json_keys_are_the_documented_ones(cache, mlp) -> None:
    _proc, res = _diff(mlp, mlp, env=cache)
    assert set(res) == set(JSON_DOC)
    assert res["version"] == 2 and res["gate"] is None


@pytest.mark.parametrize(
    "trace",
    [
        "nsys/h100_2gpu_1s.sqlite",
        "hta-triton_example-triton_example.json.gz",
        "hta-nccl_parser_config-nccl_data.json.gz",
    ],
)
def test_a_gpu_trace_against_itself_is_no_significant_change(trace: str, cache) -> None:
    src = traces_dir() / trace
    if not src.is_file():
        pytest.fail(f"{src} not found")
    proc, res = _diff(src, src, env=cache)
    assert proc.returncode == 0, proc.stderr
    assert res["verdict"] == "no significant change" and res["headline"] == []
    assert all(m["verdict"] == "same" for m in res["metrics"].values())


def test_step_time_is_not_gated_without_step_markers(cache) -> None:
    a, b = nsys_export("mfu_2gpu_before"), nsys_export("h100_2gpu_1s")
    proc = _profui("diff", a, b, "--fail-if", "step_p50>+5%", env=cache)
    assert proc.returncode == 2 and "step_p50 cannot be gated: no step markers in either trace" in proc.stderr


def test_a_broken_baseline_is_bad_input(cache, mlp) -> None:
    folder = Path(cache["PROFUI_CACHE"]) / "baselines"
    folder.mkdir(parents=True)
    (folder / "half.json").write_text('{"version": 1}')
    proc = _profui("diff", "half", mlp, env=cache)
    assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1 and "half.json" in proc.stderr
