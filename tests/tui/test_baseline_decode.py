"""A saved baseline (``$PROFUI_CACHE/baselines/NAME.json``) is read with a typed schema: a damaged
one is one line naming the file and what is wrong, exit 2, never a traceback nor a diff of
garbled numbers.

Oracle: a baseline saved by ``profui diff --save-baseline`` from a copy of the bundled sample,
read back against its own trace, is "no significant change" (the same numbers on both sides);
the same file damaged in one known place (a value nested 100,000 deep, steps as plain numbers,
numbers as strings, NaN...) makes ``profui diff NAME TRACE`` exit 2 with one stderr line that
names the file and the damaged field. Property: any JSON at all, of any shape and depth, put in
the file or in the real baseline's place, is either a profile whose diff prints only finite
numbers or one :class:`BaselineError` line.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from profui.analysis.baseline import BaselineError, decode
from profui.analysis.diff import diff
from profui.tui.cli.diff_cmd import format_diff

from anyjson import FUZZ, deep_text, json_value, scalar
from realdata import SAMPLES

PROFUI = str(Path(sys.executable).with_name("profui"))
DEEP = 100_000


def _profui(*args: str | Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [PROFUI, *map(str, args)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        stdin=subprocess.DEVNULL,
    )


@pytest.fixture(scope="module")
def saved(tmp_path_factory) -> tuple[dict[str, str], Path, Path]:
    """``(env, trace, baseline file)``: the bundled sample copied and saved as baseline ``good``."""
    root = tmp_path_factory.mktemp("baseline")
    trace = root / "trace"
    shutil.copytree(SAMPLES / "synthetic_gpu", trace, ignore=shutil.ignore_patterns(".profui"))
    env = {**os.environ, "PROFUI_CACHE": str(root / "cache")}
    proc = _profui("diff", "--save-baseline", "good", trace, env=env)
    assert proc.returncode == 0, proc.stderr
    return env, trace, root / "cache" / "baselines" / "good.json"


def _one_line_refusal(proc: subprocess.CompletedProcess, file: Path) -> str:
    assert proc.returncode == 2, (proc.returncode, proc.stdout[-500:], proc.stderr[-2000:])
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and str(file) in lines[0], proc.stderr
    return lines[0]


def test_the_saved_baseline_reads_back_as_its_trace(saved) -> None:
    env, trace, file = saved
    doc = json.loads(file.read_bytes())
    assert doc["version"] == 2 and len(doc["steps"]) == 10  # the sample's 10 steps
    proc = _profui("diff", "good", trace, "--json", env=env)
    assert proc.returncode == 0, proc.stderr
    res = json.loads(proc.stdout)
    assert res["verdict"] == "no significant change" and res["headline"] == []
    assert res["base"]["name"] == res["new"]["name"] == "synthetic-2x2gpu-200000ev-seed0"


def _deep(doc: dict) -> str:  # the trace's name 100,000 arrays deep, written as text
    doc["trace"]["name"] = "@DEEP@"
    return json.dumps(doc).replace('"@DEEP@"', "[" * DEEP + "]" * DEEP)


def _at(doc, place: str) -> tuple[object, object]:
    """The container and key of the value at ``place`` (dotted, list indexes as numbers)."""
    *parents, last = place.split(".")
    node = doc
    for p in parents:
        node = node[int(p)] if isinstance(node, list) else node[p]
    return node, int(last) if isinstance(node, list) else last


def _set(place: str, value):
    def damage(doc: dict) -> str:
        node, key = _at(doc, place)
        node[key] = value(node[key])
        return json.dumps(doc)  # NaN and Infinity as Python's json writes them

    return damage


DAMAGES = {
    # (what to do to the saved document, a word the line must hold to name what is wrong)
    "nested-100000-deep": (_deep, "trace.name"),
    "steps-as-ints": (_set("steps", lambda steps: [s["step"] for s in steps]), "steps[0]"),
    "numbers-as-strings": (_set("numbers", lambda n: {k: str(v) for k, v in n.items()}), "numbers"),
    "kernel-entries-as-ints": (_set("kernels", lambda k: dict.fromkeys(k, 5)), "kernels"),
    "trace-empty": (_set("trace", lambda t: {}), "trace"),
    "nan-number": (_set("numbers.gpu_busy", lambda v: math.nan), "JSON"),
    "infinite-number": (_set("numbers.kernel_time", lambda v: math.inf), "JSON"),
    "number-beyond-any": (_set("numbers.kernel_time", lambda v: 1e300), "numbers"),
    "int-beyond-int64": (_set("numbers.kernel_count", lambda v: 10**400), "numbers"),
    "negative-step-time": (_set("steps.3.dur_ns", lambda v: -v), "steps[3].dur_ns"),
    "step-time-a-float": (_set("steps.3.dur_ns", lambda v: v + 0.5), "steps[3].dur_ns"),
    "step-number-a-bool": (_set("steps.0.step", lambda v: True), "steps[0].step"),
    "step-number-a-string": (_set("steps.0.step", lambda v: "1"), "steps[0].step"),
    "step-number-twice": (_set("steps.1.step", lambda v: 1), "listed twice"),
    "kernel-count-negative": (
        lambda doc: (next(iter(doc["kernels"].values())).update(count=-1), json.dumps(doc))[1],
        "kernels",
    ),
    "another-version": (_set("version", lambda v: 3), "version"),
    "unknown-key-with-newline": (lambda doc: json.dumps({**doc, "odd\nkey": 1}), "odd\\nkey"),
    "truncated": (lambda doc: json.dumps(doc)[:-40], "JSON"),
}


@pytest.mark.parametrize("damage", list(DAMAGES), ids=list(DAMAGES))
def test_a_damaged_baseline_is_one_line_and_exit_2(saved, damage: str) -> None:
    env, trace, good = saved
    make, named = DAMAGES[damage]
    bad = good.with_name(f"bad-{damage}.json")
    bad.write_text(make(json.loads(good.read_bytes())))
    before = bad.read_bytes()
    for args in ((bad.stem, trace), (trace, f"baseline:{bad.stem}")):  # as either side
        line = _one_line_refusal(_profui("diff", *args, env=env), bad)
        assert named in line, line
        assert "save it again with --save-baseline" in line
    assert bad.read_bytes() == before  # nothing rewritten


def test_a_fifo_baseline_is_refused_not_waited_on(saved, tmp_path: Path) -> None:
    env, trace, good = saved
    fifo = good.with_name("pipe.json")
    os.mkfifo(fifo)
    try:
        line = _one_line_refusal(_profui("diff", "pipe", trace, env=env), fifo)
        assert "FIFO" in line
    finally:
        fifo.unlink()


def test_a_baseline_name_with_a_newline_is_refused(saved) -> None:
    env, trace, good = saved
    proc = _profui("diff", "--save-baseline", "evil\n", trace, env=env)
    assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1 and "Traceback" not in proc.stderr
    assert sorted(p.name for p in good.parent.iterdir() if "evil" in p.name) == []


# -- property: any JSON is a profile or one line -------------------------------------------------


PLACES = ["", "version", "trace", "trace.name", "trace.ranks", "trace.gpus", "steps", "steps.0",
          "steps.0.step", "steps.0.dur_ns", "numbers", "numbers.gpu_busy", "numbers.kernel_count",
          "kernels", "ops", "annotations", "has_steps"]  # fmt: skip


def _put(doc: dict, place: str, text: str) -> str:
    """``doc`` as JSON with the value at ``place`` ("" the whole document) written as ``text``."""
    if not place:
        return text
    node, key = _at(doc, place)
    node[key] = "@HERE@"
    return json.dumps(doc).replace('"@HERE@"', text, 1)


def _json_text(value) -> str:
    return json.dumps(value)  # NaN and Infinity as Python writes them: not JSON, but in files


@pytest.fixture(scope="module")
def good_doc(saved) -> dict:
    return json.loads(saved[2].read_bytes())


def _check(data: bytes, good: dict) -> None:
    """The oracle: a profile whose diff against the real one holds only finite numbers and
    prints, or one line."""
    try:
        prof = decode(data)
    except BaselineError as exc:
        line = str(exc)
        assert line and "\n" not in line and line.isprintable(), line
        event("refused")
        return
    event("a profile")
    for base, new in ((good, prof), (prof, good), (prof, prof)):
        res = diff(base, new)
        format_diff(res)
        numbers = [v for m in res["metrics"].values() for v in (m["base"], m["new"], m["delta"], m["rel"])]
        numbers += [v for t in ("kernels", "ops", "annotations") for r in res[t] for v in r.values()]
        numbers += [v for s in res["steps"] for v in s.values()]
        assert all(math.isfinite(v) for v in numbers if isinstance(v, float)), res


@FUZZ
@given(
    place=st.sampled_from(PLACES),
    text=st.one_of(scalar.map(_json_text), json_value.map(_json_text), deep_text),
)
def test_any_json_anywhere_is_a_profile_or_one_line(good_doc, place: str, text: str) -> None:
    _check(_put(json.loads(json.dumps(good_doc)), place, text).encode(), good_doc)


@FUZZ
@given(data=st.binary(max_size=64) | deep_text.map(str.encode))
def test_any_bytes_are_a_profile_or_one_line(good_doc, data: bytes) -> None:
    _check(data, good_doc)


@settings(max_examples=3, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])  # fmt: skip
@given(
    place=st.sampled_from(PLACES),
    text=st.one_of(scalar.map(_json_text), json_value.map(_json_text), deep_text),
)
def test_the_cli_on_any_json_is_a_diff_or_one_line(saved, good_doc, place: str, text: str) -> None:
    env, trace, good = saved
    file = good.with_name("fuzzed.json")
    file.write_text(_put(json.loads(json.dumps(good_doc)), place, text))
    proc = _profui("diff", "fuzzed", trace, env=env)
    assert "Traceback" not in proc.stderr
    if proc.returncode != 0:
        _one_line_refusal(proc, file)
