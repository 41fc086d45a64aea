"""Buffered metrics rows flushed as whole Parquet files; a failed write loses rows, not the run."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from pathlib import Path

#: Flush interval: short at first (so a live trace shows data soon), longer as the run goes on
#: (so an hour-long run does not leave thousands of small files).
MIN_FLUSH_S = 2.0
MAX_FLUSH_S = 30.0


class MetricsBuffer:
    """Columns of pending rows (``emit`` is thread-safe: the perf reader emits too)."""

    def __init__(self, trace_dir: Path, node: str) -> None:
        self.trace_dir = trace_dir
        self.node = node
        self.lock = threading.Lock()
        self._clear()
        self.started = time.monotonic()
        self.last_flush = self.started
        self.samples = 0
        self.files = 0
        self.lost_rows = 0
        self.first_loss: str | None = None
        self._said: dict[str, str] = {}

    def _clear(self) -> None:
        self.ts: list[int] = []
        self.source: list[str] = []
        self.device: list[int] = []
        self.metric: list[str] = []
        self.value: list[float] = []

    def emit(self, ts: int, source: str, device: int, metric: str, value: float) -> None:
        """Add one row."""
        with self.lock:
            self.ts.append(ts)
            self.source.append(source)
            self.device.append(device)
            self.metric.append(metric)
            self.value.append(float(value))
            self.samples += 1

    def emit_many(self, ts: int, source: str, metric: str, values: list[float]) -> None:
        """Add one row per device 0..n-1 (per-CPU values) in one go."""
        n = len(values)
        with self.lock:
            self.ts.extend([ts] * n)
            self.source.extend([source] * n)
            self.device.extend(range(n))
            self.metric.extend([metric] * n)
            self.value.extend(float(v) for v in values)
            self.samples += n

    def flush_interval(self) -> float:
        """Seconds between flushes at this point of the run."""
        return min(MAX_FLUSH_S, max(MIN_FLUSH_S, (time.monotonic() - self.started) * 0.05))

    def maybe_flush(self) -> None:
        """Flush when the interval has passed."""
        if time.monotonic() - self.last_flush >= self.flush_interval():
            self.flush()

    def flush(self) -> None:
        """Write pending rows as one metrics file; on failure count them as lost."""
        with self.lock:
            cols: dict[str, Sequence[object]] = {
                "ts": self.ts,
                "source": self.source,
                "device": self.device,
                "metric": self.metric,
                "value": self.value,
            }
            self._clear()
        self.last_flush = time.monotonic()
        n = len(cols["ts"])
        if not n:
            return
        try:
            from ..format import to_table, write_metrics

            write_metrics(self.trace_dir, self.node, to_table("metrics", cols))
            self.files += 1
        except Exception as exc:  # disk full, permissions...: lose these rows, keep sampling
            self.lost_rows += n
            if self.first_loss is None:
                self.first_loss = f"{time.strftime('%H:%M:%S')} ({exc})"

    def note_once(self, key: str, text: str) -> None:
        """Remember a note under ``key`` (later ones with the same key are dropped)."""
        self._said.setdefault(key, text)

    def notes(self) -> list[str]:
        """Lines for the manifest: losses and one-off problems."""
        out = list(self._said.values())
        if self.lost_rows:
            out.append(f"metrics: {self.lost_rows} rows lost, could not be written from {self.first_loss}")
        return out
