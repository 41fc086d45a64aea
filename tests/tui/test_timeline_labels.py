"""A lane label too long for the timeline's label column is cut in its middle with ``…``, and a
label ending in an id keeps the id whole: at 80 columns df_index's host threads (tids 783658 and
785244) read ``thread 78365`` and ``thread 78524``, other threads' ids, cut at the end unmarked.
The oracle is the thread ids in the raw Kineto JSON."""

from __future__ import annotations

import gzip
import json
import re

import pytest

from profui.analysis.formatting import elide
from profui.analysis.lod_open import open_lod
from profui.capture.ingest import import_trace
from profui.tui.timeline.render import Renderer
from profui.tui.timeline.state import TimelineState

from realdata import shared_trace

DF_INDEX = "hta-df_index_resolver-df_index_resolver.json.gz"


@pytest.mark.parametrize("width", [80, 100, 160])
def test_thread_labels_name_real_threads_whole_or_marked_cut(tmp_path, width: int) -> None:
    src = shared_trace(DF_INDEX)
    with gzip.open(src, "rb") as f:
        tids = {
            str(e["tid"])
            for e in json.load(f)["traceEvents"]
            if e.get("ph") == "X" and e.get("cat") in ("cpu_op", "python_function", "user_annotation")
        }
    assert any(len(t) >= 6 for t in tids)
    out = tmp_path / "dfi"
    import_trace([src], out)
    st = TimelineState(open_lod(out))
    st.set_all(False)  # every lane unfolded
    r = Renderer(st)
    lw = r.label_width(width)
    labels = [strip.text[:lw] for strip in r.render(width, 60)[2:]]
    threads = [ln for ln in labels if "thr" in ln]
    assert threads, labels
    for ln in threads:
        assert ln.endswith("│") and len(ln) == lw
        shown = re.search(r"(\d+)\s*│$", ln)
        assert shown is not None and shown.group(1) in tids, ln  # the id whole, a real thread's
        assert "thread " in ln or "…" in ln, ln  # the word whole, or the cut marked


def test_elide_keeps_a_last_word_whole() -> None:
    assert elide("thread 783658", 12, bare=False, last_word=True) == "thre… 783658"
    assert elide("thread 783658", 12, bare=False) == "thread…83658"
    assert elide("pid 783658 tid 785244", 14, bare=False, last_word=True) == "pid 78… 785244"
    # too narrow for three characters of head: cut in the middle as any text
    assert elide("thread 783658", 9, bare=False, last_word=True) == "thre…3658"
    assert elide("thread 783658", 13, bare=False, last_word=True) == "thread 783658"
