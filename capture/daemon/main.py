"""The daemon's main loop: sample at ``hz``, flush whole metrics files, convert spool hand-overs.

Talks to profcap over stdin/stdout: it prints one JSON line when ready (GPUs found, what it
skipped), reads ``job <pid>`` and ``stop`` lines, and prints one JSON result line at the end.
If profcap disappears (stdin closes without ``stop``), it keeps sampling until the job's process
ends and then finalises the manifest itself, so a trace never stays ``running`` forever.
"""

from __future__ import annotations

import json
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

from . import perf as _perf
from . import spool as _spool
from .host import HostSampler
from .metrics import MetricsBuffer
from .nvml import Nvml

SPOOL_POLL_S = 0.5


class Daemon:
    """One capture's sampler and converter."""

    def __init__(self, cfg: dict[str, Any]) -> None:
        self.trace_dir = Path(cfg["trace_dir"])
        self.spool = Path(cfg["spool"])
        # a node of a shared job keeps its manifest in node=<host>/ and its reserve to itself
        self.manifest_dir = Path(cfg.get("manifest_dir") or self.trace_dir)
        self.reserve = Path(cfg.get("reserve") or self.trace_dir / ".profcap-reserve")
        self.node = str(cfg["node"])
        self.hz = float(cfg.get("hz", 10.0))
        self.notes: list[str] = []
        self.windows: list[dict[str, Any]] = []
        self.converted: set[str] = set()
        self.failed: dict[str, str] = {}  # hand-over -> its note, until the last try
        self.stop = threading.Event()
        self.stop_requested = False
        self.orphaned = False
        self.job_pid: int | None = None
        self.buffer = MetricsBuffer(self.trace_dir, self.node)
        from ..format import writer as _writer  # noqa: F401 - pyarrow loads now, before the job starts

        self.host = HostSampler()
        self.nvml, why = Nvml.open()
        self.said: list[str] = [why] if why else []
        self.perf: _perf.PerfSampler | None = None
        events = list(cfg.get("perf_events") or [])
        if cfg.get("perf", True) and events:
            working, why = _perf.probe(events)
            if why:
                self.said.append(why)
            if working:
                interval = max(100, int(1000 / max(self.hz, 0.1)))
                try:
                    self.perf = _perf.PerfSampler(working, interval, self.buffer.emit)
                except OSError as exc:
                    self.said.append(f"no CPU counters: perf stat did not start ({exc})")
        self.converter = threading.Thread(target=self._convert_loop, name="converter", daemon=True)

    # -- protocol -------------------------------------------------------------------
    def ready_line(self) -> dict[str, Any]:
        """What profcap puts into the manifest at start."""
        gpus = self.nvml.devices() if self.nvml else []
        driver = self.nvml.driver_version() if self.nvml else None
        return {"ready": True, "gpus": gpus, "driver": driver, "notes": list(self.said)}

    def _read_stdin(self) -> None:
        for line in sys.stdin:
            word, _, arg = line.strip().partition(" ")
            if word == "job":
                try:
                    self.job_pid = int(arg)
                    self.host.set_job(self.job_pid)
                except ValueError:
                    pass
            elif word == "stop":
                self.stop_requested = True
                self.stop.set()
                return
        self.orphaned = True  # profcap went away without saying stop

    # -- loops ----------------------------------------------------------------------
    def run(self) -> dict[str, Any]:
        """Sample until told to stop; then drain the spool and return the result."""
        threading.Thread(target=self._read_stdin, name="stdin", daemon=True).start()
        self.converter.start()
        period = 1.0 / max(self.hz, 0.01)
        next_t = time.monotonic()
        while not self.stop.is_set():
            ts = time.time_ns()
            try:
                self.host.sample(ts, self.buffer.emit, self.buffer.emit_many)
                if self.nvml is not None:
                    self.nvml.sample(ts, self.host.job_pids(), self.buffer.emit)
            except Exception as exc:  # a sampling bug must not end the capture
                self.buffer.note_once("sample", f"a metrics sample failed ({exc!r}); sampling continues")
            self.buffer.maybe_flush()
            if self.orphaned and not self._job_alive():
                break
            next_t += period
            delay = next_t - time.monotonic()
            if delay < -period:  # fell behind (suspended, overloaded): do not burst to catch up
                next_t = time.monotonic()
                delay = 0
            self.stop.wait(max(delay, 0))
        return self.finish()

    def _job_alive(self) -> bool:
        if self.job_pid is None:
            return False
        import psutil

        try:
            return psutil.Process(self.job_pid).status() != psutil.STATUS_ZOMBIE
        except psutil.Error:
            return False

    def _convert_loop(self) -> None:
        while True:
            finishing = self.stop.is_set() or (self.orphaned and not self._job_alive())
            self._convert_pending()
            self.notes.extend(_spool.take_notes(self.spool))
            if finishing:
                return
            self.stop.wait(SPOOL_POLL_S)

    def _convert_pending(self, last: bool = False) -> None:
        """Convert the spool's hand-overs. One that fails and cannot be moved aside (a spool
        gone read-only) stays, untried, until the ``last`` pass, which tries it once more: its
        note is said only if that fails too."""
        for path in _spool.pending(self.spool):
            if path.name in self.converted or (path.name in self.failed and not last):
                continue
            self.failed.pop(path.name, None)
            info, note = _spool.finish_file(
                path, *_spool.convert_in_subprocess(path, self.trace_dir, self.node)
            )
            if note is None:
                self.converted.add(path.name)  # its removal may have failed: never again
            elif path.exists() and not last:
                self.failed[path.name] = note
                continue
            if info is not None:
                self.windows.append(info)
            if note:
                self.notes.append(note)

    def finish(self) -> dict[str, Any]:
        """Stop perf, flush the last metrics, convert what is left; return the result."""
        self.stop.set()
        if self.perf is not None:
            self.perf.stop()
        self.buffer.flush()
        self.converter.join()
        self._convert_pending(last=True)  # landed after the converter's last pass, or failed
        self.notes.extend(self.failed.values())
        self.notes.extend(_spool.take_notes(self.spool))
        self.notes.extend(_spool.lost_windows(self.spool))
        if self.nvml is not None:
            self.notes.extend(self.nvml.notes())
            self.nvml.close()
        self.notes.extend(self.buffer.notes())
        return {
            "notes": self.notes,
            "windows": self.windows,
            "samples": self.buffer.samples,
            "metrics_files": self.buffer.files,
        }


def finalise_orphaned(daemon: Daemon, result: dict[str, Any]) -> None:
    """profcap died before the job: close the manifest ourselves (exit code unknown)."""
    from ..format import read_manifest, write_manifest
    from ..manifest_end import finish_manifest

    trace_dir = daemon.manifest_dir
    manifest = read_manifest(trace_dir, as_stored=True)
    if manifest.status != "running":
        return
    manifest.notes.append(
        "profcap ended before the job did; the sampling daemon closed this trace "
        "(the job's exit code is unknown)"
    )
    finish_manifest(manifest, trace_dir, result, status="failed", exit_code=None)
    _spool.cleanup(daemon.spool)
    try:
        daemon.reserve.unlink()  # profcap's room for the final manifest
    except OSError:
        pass
    write_manifest(trace_dir, manifest)


def main() -> None:
    """Entry point of ``python -m profui.capture.daemon``."""
    cfg = json.loads(sys.argv[1])
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    daemon = Daemon(cfg)
    signal.signal(signal.SIGTERM, lambda *_: daemon.stop.set())
    print(json.dumps(daemon.ready_line()), flush=True)
    result = daemon.run()
    if daemon.orphaned and not daemon.stop_requested:
        try:
            finalise_orphaned(daemon, result)
        except Exception as exc:
            try:  # profcap's stderr may have no reader left
                sys.stderr.write(f"profcap daemon: could not finalise the manifest: {exc}\n")
            except (OSError, ValueError):
                pass
        return
    try:
        print(json.dumps({"result": result}), flush=True)
    except (BrokenPipeError, OSError):
        finalise_orphaned(daemon, result)
