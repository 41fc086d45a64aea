"""What a finished dashboard drew, kept so that the next open of the same trace draws it at once.

A warm open used to import Polars and the analysis pipeline (about a third of a second) only to
read the cached stage outputs and build the same charts again. The charts are what analysis
answered, laid out: :func:`save` keeps each chart's :class:`ChartData` and the trace's overview,
in JSON under the trace's one cache store
(``private_dir_for(trace)/tui/dashboard.json``); :func:`load` gives them back only when nothing
they were drawn from can have changed:

- the trace (:func:`~profui.capture.format.trace_fingerprint`: its data files and manifest);
- the analysis: the run records folder (a new run, of any parameters, changes it);
- profui's own code (every source file's size and mtime: an upgrade changes the charts' words).

A live capture is never kept. JSON, not pickle: a trace folder may come from anyone. Anything
unreadable is a miss, never an error.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, fields
from functools import cache
from pathlib import Path
from typing import Any

from rich.style import Style
from rich.text import Span, Text

from profui.capture.format import fingerprint_digest as digest
from profui.capture.format import private_dir_for, trace_fingerprint, write_bytes_atomic

from ..widgets.bars import Bar
from ..widgets.charts import ChartData, Series

#: The analysis pipeline's run records folder in the cache store (records.RUNS; a test holds
#: them equal, so that this module needs no pipeline import).
RUNS = "runs"
VERSION = 1


@cache
def code_fingerprint() -> str:
    """Size and mtime of every source file of profui (capture, analysis, tui): what the charts'
    numbers and words are made by."""
    import profui.analysis
    import profui.capture
    import profui.tui

    entries = []
    for pkg in (profui.capture, profui.analysis, profui.tui):
        root = Path(pkg.__file__).parent
        for p in sorted(root.rglob("*")):
            if p.suffix in (".py", ".so", ".c") and "__pycache__" not in p.parts:
                st = p.stat()
                entries.append([str(p.relative_to(root.parent)), st.st_size, st.st_mtime_ns])
    return digest(entries)


def key(trace_dir: Any) -> str | None:
    """The key of what a dashboard of ``trace_dir`` (an opened TraceDir) draws now; None for a
    capture still running (its answers change as it grows)."""
    if trace_dir.manifest.status == "running":
        return None
    runs = private_dir_for(trace_dir.path) / RUNS
    try:
        listing = sorted([e.name, st.st_size, st.st_mtime_ns] for e in os.scandir(runs) for st in [e.stat()])
    except OSError:
        listing = []
    return digest(
        {"v": VERSION, "trace": trace_fingerprint(trace_dir), "runs": listing, "code": code_fingerprint()}
    )


def _file(trace_dir: Any) -> Path:
    return private_dir_for(trace_dir.path) / "tui" / "dashboard.json"


def save(trace_dir: Any, charts: dict[str, ChartData], overview: Any) -> None:
    """Keep what the dashboard drew (silently nothing where the cache store cannot be written)."""
    k = key(trace_dir)
    if k is None:
        return
    doc = {
        "key": k,
        "charts": {cid: _chart_to_json(data) for cid, data in charts.items()},
        "overview": overview,
    }
    try:
        path = _file(trace_dir)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_bytes_atomic(path, json.dumps(doc).encode(), fsync=False)
    except (OSError, TypeError, ValueError):
        pass


def load(trace_dir: Any) -> tuple[dict[str, ChartData], Any] | None:
    """``(charts, overview)`` kept by :func:`save` for the trace as it is now, or None."""
    try:
        k = key(trace_dir)
        if k is None:
            return None
        doc = json.loads(_file(trace_dir).read_bytes())
        if not isinstance(doc, dict) or doc.get("key") != k:
            return None
        charts = {str(cid): _chart_from_json(d) for cid, d in doc["charts"].items()}
        return charts, doc.get("overview")
    except Exception:  # a damaged or foreign file (bad JSON, wrong types, a bad style): a miss
        return None


# -- ChartData <-> JSON ------------------------------------------------------------------------
def _text_to_json(t: str | Text) -> Any:
    if isinstance(t, str):
        return t
    return {
        "plain": t.plain,
        "style": str(t.style),
        "spans": [[s.start, s.end, str(s.style)] for s in t.spans],
    }


def _text_from_json(d: Any) -> str | Text:
    if isinstance(d, str):
        return d
    spans = [
        Span(
            _checked(a, int, "span"),
            _checked(b, int, "span"),
            Style.parse(st) if _checked(st, str, "style") else "",
        )
        for a, b, st in _checked(d["spans"], list, "spans")
    ]
    style = _checked(d["style"], str, "style")
    return Text(_checked(d["plain"], str, "plain"), style=Style.parse(style) if style else "", spans=spans)


def _chart_to_json(c: ChartData) -> dict[str, Any]:
    out = {f.name: getattr(c, f.name) for f in fields(c)}
    out["bars"] = [asdict(b) for b in c.bars]
    out["series"] = [asdict(s) for s in c.series]
    out["text"], out["note"] = _text_to_json(c.text), _text_to_json(c.note)
    return out


_NUM = (int, float)


def _checked(value: Any, kind: Any, what: str) -> Any:
    """``value`` when it is of ``kind`` (bools are not numbers), else ValueError: a chart drawn
    from a file must not fail inside the app."""
    if (isinstance(value, bool) and kind is not bool) or not isinstance(value, kind):
        raise ValueError(f"{what}: {type(value).__name__}")
    return value


def _numbers(values: Any, what: str) -> list[float]:
    return [_checked(v, _NUM, what) for v in _checked(values, list, what)]


def _chart_from_json(d: dict[str, Any]) -> ChartData:
    bars = []
    for b in _checked(d.get("bars", []), list, "bars"):
        segments = tuple(
            (_checked(f, _NUM, "segment"), _checked(g, str, "segment"), _checked(st, str, "segment"))
            for f, g, st in _checked(b.get("segments", []), list, "segments")
        )
        bars.append(
            Bar(
                _checked(b["label"], str, "label"),
                _checked(b["value"], _NUM, "value"),
                _checked(b["text"], str, "text"),
                _checked(b.get("style", "cyan"), str, "style"),
                segments,
            )
        )
    series = [
        Series(_checked(s["label"], str, "label"), _numbers(s["xs"], "xs"), _numbers(s["ys"], "ys"))
        for s in _checked(d.get("series", []), list, "series")
    ]
    optional = {k: d.get(k) for k in ("scale", "y_max")}
    for k, v in optional.items():
        if v is not None:
            _checked(v, _NUM, k)
    kind = d.get("kind", "text")
    if kind not in ("bars", "lines", "text"):
        raise ValueError(f"kind {kind!r}")
    return ChartData(
        kind=kind,
        bars=bars,
        series=series,
        x_label=_checked(d.get("x_label", ""), str, "x_label"),
        y_label=_checked(d.get("y_label", ""), str, "y_label"),
        text=_text_from_json(d.get("text", "")),
        note=_text_from_json(d.get("note", "")),
        takeaway=_checked(d.get("takeaway", ""), str, "takeaway"),
        marks=_numbers(d.get("marks", []), "marks"),
        label_width=_checked(d.get("label_width", 18), int, "label_width"),
        **optional,
    )
