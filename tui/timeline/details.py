"""The details panel and status line of the timeline: text only, from the index's event record."""

from __future__ import annotations

import json

from rich.text import Text

from ..widgets.fmt import fmt_bytes, fmt_ns
from .render import fmt_tick
from .state import TimelineState


def details_text(state: TimelineState) -> Text:
    """What the panel shows about the selected event (or how to select one)."""
    if state.selected < 0:
        return Text("←/→ select an event · ↑/↓ lanes · Enter follows a launch to its kernel · / search · g step",
                    style="grey50")
    rec = state.ix.event(state.selected)
    t = Text(no_wrap=True, overflow="ellipsis")
    t.append(rec["name"], style="bold")
    t.append("\n")
    where = f"rank {rec['rank']}"
    if rec["device"] is not None and rec["device"] >= 0:
        where += f" · GPU {rec['device']} · stream {rec['stream']}"
    else:
        where += f" · pid {rec['pid']} · tid {rec['tid']}"
    t.append(f"{rec['kind']}", style="bold")
    t.append(f" · {where} · start {fmt_tick(rec['t'], 1e3)} · dur {fmt_ns(rec['dur'])}")
    t.append("\n")
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
        bits.append("Enter: " + ("to its kernel" if rec["kind"] in ("runtime", "driver") else "back to its launch"))
    t.append(" · ".join(bits) if bits else "no correlation")
    t.append("\n")
    args = rec.get("args")
    if args:
        try:
            parsed = json.loads(args)
            args = ", ".join(f"{k}: {v}" for k, v in parsed.items()) if isinstance(parsed, dict) else args
        except ValueError:
            pass
        t.append(f"args {args}", style="grey70")
    return t


def status_text(state: TimelineState) -> Text:
    """One line: window width, the step in view, the last message."""
    t = Text(no_wrap=True, overflow="ellipsis")
    t.append(f"Δ {fmt_ns(state.span)}", style="bold")
    steps = state.ix.steps()
    if steps:
        i = state.step_index_at((state.t0 + state.t1) / 2)
        if i >= 0:
            t.append(f" · {steps[i].name} ({i + 1}/{len(steps)})")
    if state.pattern:
        t.append(f" · /{state.pattern} {state.matches.size} match{'es' if state.matches.size != 1 else ''}")
    if state.message:
        t.append(f" · {state.message}", style="italic")
    t.append("  ?: keys", style="grey50")
    return t
