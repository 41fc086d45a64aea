"""``profui diff``'s text at COLUMNS=80 (it printed 46 lines wider than 80 on this real pair):
every line fits, and what its --json says is there whole: each metric's key, each changed
kernel's, op's, runtime call's and annotation's call counts, the GPU names of both runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from realdata import shared_trace

PAIR = (
    "hta-df_index_resolver-df_index_resolver.json.gz",
    "hta-negative_queue_length_values_check-rank0.json.gz",
)
CLI = [sys.executable, "-c", "from profui.tui.cli import main; main()", "diff"]


def test_diff_text_fits_80_columns_and_cuts_no_number() -> None:
    paths = [str(shared_trace(p)) for p in PAIR]
    env = dict(os.environ, COLUMNS="80")
    text = subprocess.run([*CLI, *paths], capture_output=True, text=True, env=env, timeout=900)
    js = subprocess.run([*CLI, *paths, "--json"], capture_output=True, text=True, env=env, timeout=900)
    assert text.returncode == 0 and js.returncode == 0, text.stderr + js.stderr
    lines = text.stdout.splitlines()
    assert [ln for ln in lines if len(ln) > 80] == []
    res = json.loads(js.stdout)
    cells = {c.strip() for ln in lines for c in ln.split("│")}
    for key in res["headline"]:
        assert key in cells, key  # the --fail-if key, whole, in a cell of its own
    for section in ("kernels", "ops", "runtime", "annotations"):
        for r in res[section]:
            if r["delta_ns"] or r["base_count"] != r["new_count"]:
                assert f"{r['base_count']:,}→{r['new_count']:,}" in cells, (section, r["name"])
    words = " ".join(text.stdout.split())  # the sentences wrap at words
    gpus = {c["what"]: c for c in res["setup"]}["devices"]
    assert f"GPU changed: {gpus['base']} → {gpus['new']}" in words
