"""What a finished dashboard drew, kept so that the next open of the same trace draws it at once.

A warm open used to import Polars and the analysis pipeline (about a third of a second) only to
read the cached stage outputs and build the same charts again. The charts are what analysis
answered, laid out: :func:`save` keeps each chart's :class:`ChartData` and the trace's overview,
in JSON under the trace's one cache store
(``private_dir_for(trace)/tui/dashboard.json``); :func:`load` gives them back only when nothing
they were drawn from can have changed:

- the trace (:func:`~profui.capture.format.trace_fingerprint`: its data files and manifest);
- the analysis: the newest outputs of the stages it shows (their output hashes, as the
  pipeline serves them: :func:`~profui.analysis.pipeline.outputs.latest_outputs`), so a run that
  changes any of them changes the key, and one that changes none (the timeline's, which records
  its index and reuses the rest) keeps it;
- profui's own code: the code version of the dashboard and every module it loads (an upgrade
  changes the charts' words).

A live capture is never kept. JSON, not pickle: a trace folder may come from anyone. The file is
read with a typed schema (:class:`Kept`, msgspec): anything that does not fit it (a wrong type, a
number that is not finite or is out of range, a style Rich cannot parse, deep nesting) is a
miss, never an error: the dashboard is drawn from the stage outputs and kept anew.
"""

from __future__ import annotations

from dataclasses import asdict, fields
from functools import cache
from pathlib import Path
from typing import Annotated, Any, Literal

import msgspec
from rich.errors import StyleSyntaxError
from rich.style import Style
from rich.text import Span, Text

from profui.analysis.devices import CPU, GPU, NONE
from profui.capture.format import fingerprint_digest as digest
from profui.capture.format import private_dir_for, trace_fingerprint, write_bytes_atomic
from profui.capture.format.code_version import code_version
from profui.capture.format.regular import not_regular

from ..widgets.bars import Bar
from ..widgets.charts import ChartData, Series

VERSION = 2


#: The module that draws the dashboard: its code version covers what the charts are made by.
DASHBOARD = "profui.tui.views.dashboard"


@cache
def code_fingerprint() -> str:
    """The code version of the dashboard (:func:`~profui.capture.format.code_version.code_version`
    of its view and every module it loads: the chart builders, the pipeline, the analyses): what
    the charts' numbers and words are made by."""
    return code_version((DASHBOARD,))


def key(trace_dir: Any) -> str | None:
    """The key of what a dashboard of ``trace_dir`` (an opened TraceDir) draws now; None for a
    capture still running (its answers change as it grows)."""
    if trace_dir.manifest.status == "running":
        return None
    from profui.analysis.pipeline.artifacts import verify
    from profui.analysis.pipeline.outputs import latest_outputs

    from .dashboard_charts import STAGES

    have = latest_outputs(trace_dir.path)  # verified: a second verify is the process's record
    made = {s: meta.output_hash for s in STAGES if s in have for meta in [verify(have[s])] if meta}
    return digest(
        {"v": VERSION, "trace": trace_fingerprint(trace_dir), "outputs": made, "code": code_fingerprint()}
    )


def _file(trace_dir: Any) -> Path:
    return private_dir_for(trace_dir.path) / "tui" / "dashboard.json"


def save(trace_dir: Any, charts: dict[str, ChartData], overview: Any) -> None:
    """Keep what the dashboard drew (silently nothing where the cache store cannot be written, or
    where a value would not be read back: :func:`decode`'s schema is checked before writing)."""
    k = key(trace_dir)
    if k is None:
        return
    doc = {
        "key": k,
        "charts": {cid: _chart_to_json(data) for cid, data in charts.items()},
        "overview": overview,
    }
    try:
        data = msgspec.json.encode(msgspec.convert(doc, Kept))
        path = _file(trace_dir)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_bytes_atomic(path, data, fsync=False)
    except (OSError, msgspec.ValidationError):
        pass


def load(trace_dir: Any) -> tuple[dict[str, ChartData], Any] | None:
    """``(charts, overview)`` kept by :func:`save` for the trace as it is now, or None."""
    try:
        k = key(trace_dir)
        if k is None:
            return None
        path = _file(trace_dir)
        if not_regular(path):  # a FIFO would block the app's first frame
            return None
        data = path.read_bytes()
    except Exception:  # the trace or its store cannot be read now: the normal path says why
        return None
    return decode(data, k)


def decode(data: bytes, k: str) -> tuple[dict[str, ChartData], dict[str, Any] | None] | None:
    """``(charts, overview)`` held by the kept file's ``data`` when it is a dashboard of key
    ``k``; None (a miss) for anything else: never an error."""
    try:
        doc = _DECODER.decode(data)
    except (msgspec.DecodeError, RecursionError):  # RecursionError: only from a deep caller
        return None
    if doc.key != k:
        return None
    charts = {cid: _chart_data(c) for cid, c in doc.charts.items()}
    return charts, doc.overview


# -- the schema of the kept file ---------------------------------------------------------------
# Every number a chart draws is an int64 time or count, a share, or one of those scaled down:
# beyond 2**63 (or not finite) it is damage, and plotext's axes overflow near 1e307.
_LIMIT = float(2**63)
Num = Annotated[float, msgspec.Meta(ge=-_LIMIT, le=_LIMIT)]
Int64 = Annotated[int, msgspec.Meta(ge=-(2**63), le=2**63 - 1)]
Count = Annotated[int, msgspec.Meta(ge=0, le=2**63 - 1)]
#: A stacked bar's segment: its fraction of the bar's full width.
Fraction = Annotated[float, msgspec.Meta(ge=0.0, le=1.0)]
Width = Annotated[int, msgspec.Meta(ge=0, le=10_000)]


def _style(spec: str) -> None:
    # a style Rich cannot parse fails when drawn, inside the app; msgspec reports a ValueError
    try:
        if spec:
            Style.parse(spec)
    except StyleSyntaxError as exc:
        raise ValueError(str(exc)) from None


class TextDoc(msgspec.Struct, forbid_unknown_fields=True):
    """A Rich :class:`~rich.text.Text`: its characters, style and spans."""

    plain: str
    style: str
    spans: list[tuple[Count, Count, str]]

    def __post_init__(self) -> None:
        _style(self.style)
        for start, end, style in self.spans:
            if end < start:  # Rich fails drawing a span that ends before it starts
                raise ValueError("a span ends before it starts")
            _style(style)


class BarDoc(msgspec.Struct, forbid_unknown_fields=True):
    """A :class:`~profui.tui.widgets.bars.Bar`."""

    label: str
    value: Num
    text: str
    style: str = "cyan"
    segments: list[tuple[Fraction, str, str]] = []

    def __post_init__(self) -> None:
        _style(self.style)
        for _, _, style in self.segments:
            _style(style)


class SeriesDoc(msgspec.Struct, forbid_unknown_fields=True):
    """A :class:`~profui.tui.widgets.charts.Series`."""

    label: str
    xs: list[Num]
    ys: list[Num]

    def __post_init__(self) -> None:
        if len(self.xs) != len(self.ys):
            raise ValueError("a series has not as many x as y values")


class ChartDoc(msgspec.Struct, forbid_unknown_fields=True):
    """A :class:`~profui.tui.widgets.charts.ChartData`."""

    kind: Literal["bars", "lines", "text"] = "text"
    bars: list[BarDoc] = []
    scale: Num | None = None
    series: list[SeriesDoc] = []
    x_label: str = ""
    y_label: str = ""
    y_max: Num | None = None
    text: str | TextDoc = ""
    note: str | TextDoc = ""
    takeaway: str = ""
    marks: list[Num] = []
    label_width: Width = 18

    def __post_init__(self) -> None:
        # plotext draws a line to a point off its y axis cell by cell: a y a million axis heights
        # away takes minutes and gigabytes (the charts give 0..100 and their points inside it)
        if self.y_max is None:
            return
        if not self.y_max > 0:
            raise ValueError("y_max is not above 0")
        if any(abs(y) > 2 * self.y_max for s in self.series for y in s.ys):
            raise ValueError("a y value lies far off the axis up to y_max")


#: The trace's overview (``ingest/trace.json``'s ``overview``): a flat record of scalars and lists
#: of them, open to keys a newer analysis adds (so never deeper than that, whatever its keys).
Scalar = str | bool | Int64 | Num | None
OverviewDoc = dict[str, Scalar | list[Scalar]]


class Overview(msgspec.Struct):
    """What the TUI reads of the overview, typed: the title line's device count
    (:func:`~profui.analysis.devices.fmt_devices`) and the words for its devices
    (:func:`~profui.analysis.devices.words_for`); an overview from before ``devices`` and
    ``device_type`` were recorded reads as GPUs."""

    gpus: Count
    gpus_listed: Count | None = None
    devices: Count | None = None
    device_type: Literal[GPU, CPU, NONE] = GPU  # type: ignore[valid-type]


class Kept(msgspec.Struct, forbid_unknown_fields=True):
    """The kept file. It holds no free-form value and no unknown field, so it also bounds the
    nesting: msgspec stops at the first value deeper than the schema, never descending into it."""

    key: str
    charts: dict[str, ChartDoc]
    overview: OverviewDoc | None = None

    def __post_init__(self) -> None:
        if self.overview is not None:
            msgspec.convert(self.overview, Overview)


_DECODER = msgspec.json.Decoder(Kept)


# -- ChartData <-> JSON ------------------------------------------------------------------------
def _text_to_json(t: str | Text) -> Any:
    if isinstance(t, str):
        return t
    return {
        "plain": t.plain,
        "style": str(t.style),
        "spans": [[s.start, s.end, str(s.style)] for s in t.spans],
    }


def _text(d: str | TextDoc) -> str | Text:
    if isinstance(d, str):
        return d
    spans = [Span(a, b, Style.parse(st) if st else "") for a, b, st in d.spans]
    return Text(d.plain, style=Style.parse(d.style) if d.style else "", spans=spans)


def _chart_to_json(c: ChartData) -> dict[str, Any]:
    out = {f.name: getattr(c, f.name) for f in fields(c)}
    out["bars"] = [asdict(b) for b in c.bars]
    out["series"] = [asdict(s) for s in c.series]
    out["text"], out["note"] = _text_to_json(c.text), _text_to_json(c.note)
    return out


def _chart_data(d: ChartDoc) -> ChartData:
    return ChartData(
        kind=d.kind,
        bars=[Bar(b.label, b.value, b.text, b.style, tuple(b.segments)) for b in d.bars],
        scale=d.scale,
        series=[Series(s.label, s.xs, s.ys) for s in d.series],
        x_label=d.x_label,
        y_label=d.y_label,
        y_max=d.y_max,
        text=_text(d.text),
        note=_text(d.note),
        takeaway=d.takeaway,
        marks=d.marks,
        label_width=d.label_width,
    )
