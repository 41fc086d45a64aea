"""How numbers read, everywhere: durations, sizes, shares, counts, dates, kernel names.

The one formatting module: takeaways, ``profui summary``'s tables and the TUI all use it, so a
number reads the same wherever it appears. Percentages exist only here: every frame holds shares
as 0–1 fractions (see :mod:`profui.analysis.schemas`).
"""

from __future__ import annotations

import math
import os
import re
from datetime import datetime
from functools import lru_cache


def fmt_ns(ns: float | int | None) -> str:
    """A duration in ns as a short human string (``812 ns``, ``3.41 µs``, ``12.3 ms``, ``4.20 s``)."""
    if ns is None or (isinstance(ns, float) and math.isnan(ns)):
        return "-"
    v = float(ns)
    a = abs(v)
    if a < 1e3:
        return f"{v:.0f} ns"
    if a < 1e6:
        return f"{v / 1e3:.3g} µs" if a < 1e5 else f"{v / 1e3:.0f} µs"
    if a < 1e9:
        return f"{v / 1e6:.3g} ms" if a < 1e8 else f"{v / 1e6:.0f} ms"
    if a < 60e9:
        return f"{v / 1e9:.3g} s"
    minutes, seconds = divmod(v / 1e9, 60)
    if minutes < 60:
        return f"{minutes:.0f}m{seconds:02.0f}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours:.0f}h{minutes:02.0f}m"


def fmt_signed_ns(ns: float | int) -> str:
    """A change of a duration with its sign: ``+8.34 ms``, ``-31.6 ms``."""
    return ("+" if ns >= 0 else "-") + fmt_ns(abs(ns))


def fmt_bytes(n: float | int | None) -> str:
    """A size in bytes (``1.2 MB``); decimal units like ``du --si``."""
    if n is None:
        return "-"
    v = float(n)
    for unit in ("B", "kB", "MB", "GB", "TB"):
        if abs(v) < 1000 or unit == "TB":
            return f"{v:.0f} {unit}" if unit == "B" else f"{v:.3g} {unit}"
        v /= 1000
    return f"{v:.3g} TB"  # pragma: no cover


def fmt_memory_device(device_type: str, device: int | None) -> str:
    """A memory device as every surface names it: ``cuda1``, ``cpu`` (Device Id -1)."""
    name = str(device_type).lower().replace(" ", "")
    return name if device is None or device < 0 else f"{name}{device}"


def fmt_pct(share: float | None, digits: int = 1) -> str:
    """A share in [0, 1] as a percentage: ``46.2%`` (``digits=0``: ``46%``).

    Shares too small to show at ``digits`` read ``<0.1%`` (or ``<1%`` …) rather than ``0%``; with
    ``digits=0``, shares under 1% keep one digit and 99.5–100% reads ``>99%``, so a small share
    never reads as none and a large one never as all.
    """
    if share is None or (isinstance(share, float) and math.isnan(share)):
        return "-"
    pct = 100.0 * share
    if digits == 0:
        if 0 < abs(pct) < 0.1:
            return "<0.1%"
        if 0 < abs(pct) < 1:
            return f"{pct:.1f}%"
        if 99.5 <= pct < 100:
            return ">99%"
        return f"{pct:.0f}%"
    floor = 10.0**-digits
    if 0 < abs(pct) < floor:
        return f"<{floor:g}%"
    return f"{pct:.{digits}f}%"


def fmt_count(n: int | float | None) -> str:
    """A count with thousands separators."""
    if n is None:
        return "-"
    return f"{int(n):,}"


def fmt_epoch(ns: int | None) -> str:
    """An epoch-ns instant as local ``YYYY-MM-DD HH:MM``."""
    if not ns:
        return "-"
    return datetime.fromtimestamp(ns / 1e9).strftime("%Y-%m-%d %H:%M")


def fmt_short_count(n: int) -> str:
    """A count in at most ~4 characters (``151k``, ``2.3M``)."""
    if n < 1000:
        return str(n)
    if n < 1_000_000:
        return f"{n / 1000:.3g}k" if n < 10_000 else f"{n // 1000}k"
    return f"{n / 1e6:.3g}M"


def plural(n: int | float, word: str) -> str:
    """``1 kernel`` / ``2,700 kernels`` (adds ``s``, or ``es`` after ``ch``)."""
    suffix = "" if int(n) == 1 else ("es" if word.endswith("ch") else "s")
    return f"{fmt_count(n)} {word}{suffix}"


def fmt_gpus(active: int, listed: int) -> str:
    """How many GPUs the trace used: ``1 of 8 GPUs active`` when the trace lists GPUs it never
    used (Kineto lists every GPU of the machine), else ``4 GPUs`` / ``no GPU``."""
    if active < listed:
        return f"{active} of {plural(listed, 'GPU')} active"
    return plural(active, "GPU") if active else "no GPU"


def fmt_gbps(v: float | None) -> str:
    """A bandwidth given in GB/s, the one way every surface writes one: three significant digits
    with thousands separators (``1,679 GB/s``, ``32 GB/s``, ``12.3 GB/s``), and below 1 GB/s in
    MB/s, kB/s or B/s (``1.55 MB/s``, ``343 kB/s``), decimal units like :func:`fmt_bytes`."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    x = float(v)
    for scale, unit in ((1.0, "GB/s"), (1e-3, "MB/s"), (1e-6, "kB/s"), (1e-9, "B/s")):
        if abs(x) >= scale or unit == "B/s" or x == 0:
            y = x / scale
            return f"{y:,.0f} {unit}" if abs(y) >= 100 or y == 0 else f"{y:.3g} {unit}"
    return f"{x:.3g} GB/s"  # pragma: no cover


def fmt_level(v: float | int | None) -> str:
    """A mean or median of a small count (items in a queue): two decimals at most, trailing zeros
    dropped (``2.21``, ``0.12``, ``0.5``, ``3``), ``<0.01`` for a level too small to show."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    x = float(v)
    if 0 < abs(x) < 0.005:
        return "<0.01"
    return f"{x:,.2f}".rstrip("0").rstrip(".")


_SI = ((1e18, "E"), (1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))


def _si(v: float) -> str:
    for scale, prefix in _SI:
        if abs(v) >= scale:
            return f"{v / scale:.3g} {prefix}"
    return f"{v:.3g} "


def fmt_flops(v: float | None) -> str:
    """A FLOP count with an SI prefix (``171 kFLOP``, ``1.66 TFLOP``)."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    return _si(float(v)) + "FLOP"


def fmt_tflops(v: float | None) -> str:
    """A rate given in TFLOP/s, with the prefix that reads best (``312 TFLOP/s``, ``1.79 MFLOP/s``)."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    return _si(float(v) * 1e12) + "FLOP/s"


#: Namespace and class qualifiers (``at::native::``, ``torch.distributed.ddp.reducer::``).
_QUALIFIERS = re.compile(r"\(anonymous namespace\)::|\b(?:[A-Za-z_][\w.]*::)+")


def _bare(name: str) -> str:
    """A kernel name without ``void``, namespace qualifiers and a call's argument list (types
    that repeat the template arguments); ``Memcpy HtoD (Pageable -> Device)`` stays whole."""
    s = re.sub(r"^void\s+", "", name.strip())
    s = _QUALIFIERS.sub("", s)
    if s.endswith(")"):
        depth = 0
        for i in range(len(s) - 1, 0, -1):
            depth += {")": 1, "(": -1}.get(s[i], 0)
            if depth == 0:
                if re.match(r"[\w>]", s[i - 1]):
                    s = s[:i]
                break
    return s


def _cut(s: str, width: int, head: int) -> str:
    return s if len(s) <= width else s[:head] + "…" + s[len(s) - (width - head - 1) :]


def elide(name: str, width: int, bare: bool = True, last_word: bool = False) -> str:
    """A long text in ``width`` characters, cut in the middle: its head and its tail around
    ``…``, since related names share a prefix and differ at the end (tile sizes, suffixes,
    ``rank-0`` / ``rank-1``). The one rule for cutting text on every surface. With ``bare`` (kernel
    names), the name is first made bare (:func:`_bare`) when too long. With ``last_word`` (a
    label ending in an id: ``thread 783658``) the tail is at least its last word whole where
    three characters of the head still fit (``thr… 783658``): an id cut anywhere reads as another."""
    if len(name) <= width:
        return name
    if width < 2:
        return name[:width]
    text = _bare(name) if bare else name
    head = width // 2
    if last_word and " " in text:
        tail = len(text) - text.rindex(" ")  # the last word and the space before it
        head = min(head, width - 1 - tail) if width - 1 - tail >= 3 else head
    return _cut(text, width, head)


def _around(s: str, width: int, at: int) -> str:
    """``s`` in ``width`` characters: a short head, then the text from just before ``at``."""
    head = min(width // 4, at)
    room = width - head - 1
    start = max(head, at - room // 3)
    seg = s[start : start + room]
    if start + room < len(s):
        seg = seg[:-1] + "…"
    return s[:head] + "…" + seg if start > head else s[: head + len(seg)]


def elide_all(names: list[str], width: int, bare: bool = True) -> list[str]:
    """:func:`elide` of each name; names that would then read the same show, instead, the part
    where they first differ, so distinct rows stay distinct in one table."""
    out = [elide(n, width, bare) for n in names]
    if width < 12:
        return out
    for _ in range(4):  # a group split at its first difference may still collide further on
        groups: dict[str, list[int]] = {}
        for i, text in enumerate(out):
            groups.setdefault(text, []).append(i)
        clashes = [idx for idx in groups.values() if len({names[i] for i in idx}) > 1]
        if not clashes:
            break
        for idx in clashes:
            full = [_bare(names[i]) if bare else names[i] for i in idx]
            at = len(os.path.commonprefix(full))
            for i, b in zip(idx, full, strict=True):
                out[i] = _around(b, width, at)
    return out


@lru_cache(maxsize=65536)
def _short_form(name: str, width: int) -> str:
    """The one rule for what of a kernel or op name is kept: no ``void``, argument lists or
    template arguments; when still longer than ``width``, no namespace qualifiers either."""
    s = re.sub(r"^void\s+", "", name.strip()).replace("->", "→")
    depth, out = 0, []
    for ch in s:  # drop (...) and <...> nests
        if ch in "(<":
            depth += 1
        elif ch in ")>":
            depth = max(0, depth - 1)
        elif depth == 0:
            out.append(ch)
    s = re.sub(r"(::)+", "::", re.sub(r"\s+", " ", "".join(out))).strip() or name
    if len(s) > width:  # every qualifier, not all but the last "::" part (a name of its own)
        s = _QUALIFIERS.sub("", s).strip() or s
    return s


def short_name(name: str, width: int = 40) -> str:
    """A kernel or op name in ``width`` characters (takeaways, messages): its short form
    (``evaluate_function: AccumulateGrad`` when the qualified one is too long), cut in the
    middle (:func:`elide`)."""
    return elide(_short_form(name, width), width, bare=False)


def block_label(name: str, room: int) -> str:
    """A kernel or op name as the label of a timeline block ``room`` cells wide: the same short
    form as :func:`short_name`, cut at its end with no mark, as trace viewers label blocks: the
    head names the event, and in a few cells an ellipsis or a tail leaves nothing readable."""
    return _short_form(name, room)[:room]
