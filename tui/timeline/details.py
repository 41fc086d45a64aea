"""The details panel and status line of the timeline: text only, from the index's event record."""

from __future__ import annotations

import json

from rich.text import Text

from profui.analysis.formatting import fmt_bytes, fmt_ns

from .state import TimelineState


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(width - 1, 0)] + "…"


def details_text(state: TimelineState, width: int = 200) -> Text:
    """What the panel shows about the selected event (or how to select one), one field group a line,
    each cut to ``width``."""
    vr = state.current()
    if vr is not None and vr.series is not None and vr.series in state.ix.memory_peak:
        at, peak = state.ix.memory_peak[vr.series]
        line = f"{vr.lane.label}: allocated bytes over time · peak {fmt_bytes(peak)} at {fmt_ns(at)}"
        return Text(_cut(line, width) + "\n" + _cut("Enter: go to its peak · M: the highest peak", width))
    if state.selected < 0:
        w = state.words
        follow = f" · Enter follows a {w.launch} to its {w.work}" if state.has_links else ""
        return Text(f"←/→ select an event · ↑/↓ lanes{follow} · / search · g step", style="grey50")
    rec = state.ix.event(state.selected)
    lines = _detail_lines(rec, state.words.Device)
    t = Text()
    for i, (text, style) in enumerate(lines):
        if i:
            t.append("\n")
        t.append(_cut(text, width), style=style)
    return t


def _detail_lines(rec: dict, device: str = "GPU") -> list[tuple[str, str]]:
    out = [(rec["name"], "bold")]
    where = f"rank {rec['rank']}"
    if rec["device"] is not None and rec["device"] >= 0:
        stream = rec["stream"]
        where += f" · {device} {rec['device']} · " + (
            f"stream {stream}" if stream is not None and stream >= 0 else "no stream"
        )
    else:
        where += f" · pid {rec['pid']} · tid {rec['tid']}"
    out.append((f"{rec['kind']} · {where} · start {rec['t'] / 1e6:.3f}ms · dur {fmt_ns(rec['dur'])}", ""))
    bits = []
    if rec.get("correlation") is not None:
        bits.append(f"correlation {rec['correlation']}")
    if rec.get("external_id") is not None:
        bits.append(f"ext id {rec['external_id']}")
    if rec.get("bytes") is not None:
        mk = f" {rec['memcpy_kind']}" if rec.get("memcpy_kind") else ""
        bits.append(f"bytes {fmt_bytes(rec['bytes'])}{mk}")
    if rec.get("launch_latency_ns") is not None:
        bits.append(f"launch latency {fmt_ns(rec['launch_latency_ns'])}")
    if rec["link"] >= 0:
        bits.append(
            "Enter: " + ("to its kernel" if rec["kind"] in ("runtime", "driver") else "back to its launch")
        )
    out.append((" · ".join(bits) if bits else "no correlation", ""))
    args = rec.get("args")
    if args:
        try:
            parsed = json.loads(args)
            args = ", ".join(f"{k}: {v}" for k, v in parsed.items()) if isinstance(parsed, dict) else args
        except ValueError:
            pass
        out.append((f"args {args}", "grey70"))
    return out


def status_text(state: TimelineState, width: int = 200) -> Text:
    """One line of at most ``width`` cells: window width, the step in view, the search, the
    last message. The message, the newest, stays whole: what is older is shortened first (the
    keys hint, the search, the step, then the window width)."""
    head = f"Δ {fmt_ns(state.span)}"
    step = ""
    steps = state.ix.steps()
    if steps:
        i = state.step_index_at((state.t0 + state.t1) / 2)
        if i >= 0:
            step = f" · {steps[i].name} ({i + 1}/{len(steps)})"
    search = ""
    if state.pattern and state.matches.size:  # a search that found nothing is said by its message
        # a /regex/ is shown as typed; a plain search gets the / the prompt showed
        typed = state.pattern if state.pattern.startswith("/") else f"/{state.pattern}"
        search = f" · {typed} {state.matches.size} match{'es' if state.matches.size != 1 else ''}"
    message = f" · {state.message}" if state.message else ""
    keys = "  ?: keys"
    if len(head + step + search + message + keys) > width:
        keys = ""
    room = width - len(message)
    if len(head + step + search) > room:
        search = _cut(search, max(room - len(head + step), 0)) if room - len(head + step) >= 8 else ""
    if len(head + step + search) > room:
        step = _cut(step, max(room - len(head), 0)) if room - len(head) >= 8 else ""
    if len(head) > room:  # a cut window width reads as noise ("Δ 4…"): the message alone
        head = ""
    if not head and message:
        message = message.removeprefix(" · ")
    t = Text(no_wrap=True, overflow="ellipsis")
    t.append(head, style="bold")
    t.append(step + search)
    if message:
        t.append(message, style="italic")
    t.append(keys, style="grey50")
    return t
