"""In-process tracing of a torch job: torch.profiler armed for the requested step windows.

Loaded by the bootstrap ``sitecustomize`` right after ``torch`` finishes importing. Steps are
counted with torch's global optimizer-step post hook (or :func:`profui.capture.step`); the
profiler starts lazily at the first optimizer step, so launchers and DataLoader workers never
profile. Each finished window is written by Kineto's own exporter into the spool folder and
converted by the profcap daemon; this module never builds ``prof.events()``.
"""

from __future__ import annotations

import atexit
import json
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from . import session as _session
from .windows import Window, WindowPlan

if TYPE_CHECKING:  # torch is imported when a window starts, never at bootstrap
    from torch.profiler import profile

#: Length of a window opened by start_profiling(): until stop_profiling().
_OPEN_END = 1 << 62


class Tracer:
    """Profiler windows of one traced process."""

    def __init__(self, torch, sess: _session.Session) -> None:
        self.torch = torch
        self.session = sess
        self.pid = os.getpid()
        self.rank = _session.rank()
        self.plan = WindowPlan.from_config(sess.plan)
        self.k = 0
        self.window: Window | None = self.plan.window(0)
        self.step_num = 0  # the step now running (= optimizer steps completed)
        self.first_optimizer: int | None = None
        self.manual_steps = False
        self.prof: profile | None = None
        self.active: Window | None = None
        self.owner: bool | None = None
        self.disabled = False
        self.backed_off = False
        self.seq = 0
        self.marker: Path | None = None
        self._has_cuda: bool | None = None
        self.window_start_step = 0
        self._last_steps = (0, 0)
        self._pending: tuple[Path, Path] | None = None
        self._stall_s = 0.0
        self._export_s = 0.0

    # -- step sources -------------------------------------------------------------------
    def on_optimizer_step(self, optimizer, args, kwargs) -> None:
        """torch's global optimizer-step post hook: one call per step of any optimizer."""
        if self.manual_steps or self.disabled or os.getpid() != self.pid:
            return
        if self.first_optimizer is None:
            self.first_optimizer = id(optimizer)
        elif id(optimizer) != self.first_optimizer:
            return
        self.advance()

    def on_user_step(self) -> None:
        """profui.capture.step(): the user marks steps; optimizer hooks are ignored from now on."""
        if os.getpid() != self.pid or self.disabled:
            return
        self.manual_steps = True
        self.advance()

    def advance(self) -> None:
        """One step ended: move the profiler along its windows."""
        self.step_num += 1
        cur = self.step_num
        try:
            if self.prof is not None:
                if self.active is not None and cur > self.active.last:
                    self._stop()
                else:
                    self.prof.step()
                    return
            while self.window is not None and self.window.last < cur:
                self._next_window()
            if self.window is not None and cur >= self._arm_at(self.window):
                self._start(self.window, cur)
        except Exception as exc:  # never let tracing break training
            self._fail(exc)

    # -- windows ----------------------------------------------------------------------
    def _arm_at(self, w: Window) -> int:
        # One warm-up step at least, CPU-only too: the profiler's start-up (CUPTI, Kineto's
        # own set-up) then lands in an untraced step. Without it the first traced step of a CPU
        # run measured 500x the others and showed up as a false outlier.
        warmup = max(1, w.warmup)
        return max(1, w.first - warmup)

    def _cuda(self) -> bool:
        if self._has_cuda is None:
            try:
                self._has_cuda = bool(self.torch.cuda.is_available())
            except Exception:
                self._has_cuda = False
        return self._has_cuda

    def _next_window(self) -> None:
        self.k += 1
        self.window = self.plan.window(self.k)

    def _start(self, w: Window, cur: int) -> None:
        if self.owner is None:
            try:
                self.owner = _session.claim_rank(self.session, self.rank)
            except OSError as exc:  # not claimed, so never said by a marker: said here
                last = w.last if w.last < _OPEN_END else None
                why = f"could not be written: the spool {self.session.spool} takes no file ({exc.strerror or exc})"
                self.session.note(_session.lost_window(self.rank, self.pid, w.first, last, why))
                if w is self.window:
                    self._next_window()
                return
        if not self.owner:
            self.disabled = True
            return
        if self.backed_off:
            return
        from torch.autograd import profiler as autograd_profiler
        from torch.profiler import ProfilerAction, ProfilerActivity, profile

        if autograd_profiler._is_profiler_enabled:
            self._back_off("a profiler is already running in this process")
            return
        activities = [ProfilerActivity.CPU]
        if self._cuda():
            activities.append(ProfilerActivity.CUDA)
        first = w.first

        def schedule(step: int) -> Literal[ProfilerAction.WARMUP, ProfilerAction.RECORD]:
            return ProfilerAction.WARMUP if step < first else ProfilerAction.RECORD

        prof = profile(
            activities=activities,
            record_shapes=True,
            profile_memory=self.session.memory,
            schedule=schedule,
            on_trace_ready=self._export,
        )
        # Label steps with their global numbers (ProfilerStep#<n>).
        prof.step_num = cur
        prof.current_action = schedule(cur)
        if hasattr(prof, "_prev_schedule_action"):
            prof._prev_schedule_action = prof.current_action
        self.seq += 1
        self.marker = self.session.window_marker(
            self.rank, self.pid, self.seq, first, w.last if w.last < _OPEN_END else None
        )
        try:
            self.marker.touch()
        except OSError:
            self.marker = None
        self.active = w
        self.prof = prof
        self.window_start_step = cur
        prof.start()

    def _stop(self) -> None:
        prof, self.prof = self.prof, None
        w, self.active = self.active, None
        if prof is None:
            return
        assert w is not None  # _start sets both, and only this clears them
        self._last_steps = (max(w.first, self.window_start_step), min(w.last, self.step_num - 1))
        t0 = time.perf_counter()
        prof.stop()  # RECORD -> None: stop_trace, then on_trace_ready (_export)
        self._stall_s = time.perf_counter() - t0
        self._write_meta()
        if w is self.window:
            self._next_window()

    def _export(self, prof) -> None:
        t0 = time.perf_counter()
        final = self.session.spool_name(self.rank, self.pid, self.seq, _session.KINETO_SUFFIX)
        tmp = final.with_name(final.name + ".tmp")
        try:
            prof.export_chrome_trace(str(tmp))
            self._pending = (tmp, final)
        except Exception as exc:
            self._pending = None
            self._lost(f"not exported ({exc})", final, exc)
        self._export_s = time.perf_counter() - t0

    def _write_meta(self) -> None:
        pending, self._pending = self._pending, None
        if pending is not None:
            tmp, final = pending
            meta = {
                "first": self._last_steps[0],
                "last": self._last_steps[1],
                "stall_ms": round(self._stall_s * 1e3, 3),
                "export_ms": round(self._export_s * 1e3, 3),
            }
            try:
                final.with_name(final.name + ".meta").write_text(json.dumps(meta))
                os.replace(tmp, final)
            except OSError as exc:
                self._lost(f"not written ({exc})", final, exc)
        if self.marker is not None:
            try:
                self.marker.unlink()
            except OSError:
                pass
            self.marker = None

    def _lost(self, why: str, final: Path, exc: BaseException) -> None:
        """A window could not be handed over (disk full...): free its space, leave word of it."""
        for part in (".tmp", ".meta"):  # the meta too: a full disk leaves it made but empty
            try:
                final.with_name(final.name + part).unlink()
            except OSError:
                pass
        if self.marker is not None:
            # renaming needs no free space, unlike writing a note: profcap reads it at the end
            try:
                os.replace(self.marker, _session.failed_marker(self.marker, _errno(exc)))
                self.marker = None
            except OSError:
                pass
        self.session.note(f"rank {self.rank} pid {self.pid}: trace window {self.seq} {why}; it is lost")

    # -- manual control ------------------------------------------------------------------
    def start_manual(self) -> None:
        """start_profiling(): open a window now, until stop_profiling()."""
        if os.getpid() != self.pid or self.disabled or self.prof is not None:
            return
        try:
            self._start(Window(self.step_num, _OPEN_END), self.step_num)
        except Exception as exc:
            self._fail(exc)

    def stop_manual(self) -> None:
        """stop_profiling(): close the window now (whatever opened it)."""
        if os.getpid() != self.pid or self.prof is None:
            return
        try:
            self._stop()
        except Exception as exc:
            self._fail(exc)

    # -- failure paths -------------------------------------------------------------------
    def user_profiler_started(self, prof) -> None:
        """A torch.profiler that is not ours is starting: stop ours and trace no more."""
        if prof is self.prof or os.getpid() != self.pid:
            return
        if self.prof is not None:
            try:
                self._stop()
            except Exception:
                self.prof = None
        self._back_off("the job runs its own torch.profiler")

    def _back_off(self, why: str) -> None:
        if not self.backed_off:
            self.backed_off = True
            self.session.note(f"rank {self.rank} pid {self.pid}: profcap tracing backed off: {why}")
        self.window = None

    def _fail(self, exc: BaseException) -> None:
        self.disabled = True
        self.session.note(f"rank {self.rank} pid {self.pid}: tracing stopped after an error: {exc!r}")
        prof, self.prof = self.prof, None
        if prof is not None:
            try:
                prof.stop()
            except Exception:
                pass

    def at_exit(self) -> None:
        """Interpreter exit: export a window still open (a run shorter than its window), and
        leave the step count reached so profcap can say why a short run has no window."""
        if os.getpid() != self.pid:
            return
        if self.prof is not None:
            try:
                self._stop()
            except Exception as exc:
                self._fail(exc)
        if self.step_num:
            try:
                (self.session.spool / f"steps-r{self.rank}-p{self.pid}").write_text(
                    json.dumps({"steps": self.step_num, "backed_off": self.backed_off or self.disabled})
                )
            except OSError:
                pass


def _errno(exc: BaseException | None) -> int | None:
    """The OS error number behind ``exc`` (torch raises RuntimeErrors that wrap it), if any."""
    while exc is not None:
        if isinstance(exc, OSError) and exc.errno:
            return exc.errno
        exc = exc.__cause__ or exc.__context__
    return None


_tracer: Tracer | None = None


def get() -> Tracer | None:
    """The tracer of this process (None when not armed, e.g. outside profcap)."""
    return _tracer if _tracer is not None and _tracer.pid == os.getpid() else None


def arm(torch) -> Tracer | None:
    """Arm tracing in this process; called once, right after ``import torch`` completes."""
    global _tracer
    sess = _session.current()
    if sess is None or not sess.trace or _tracer is not None:
        return _tracer
    from torch.optim.optimizer import register_optimizer_step_post_hook
    from torch.profiler import profiler as torch_profiler

    tracer = Tracer(torch, sess)
    try:
        (sess.spool / f"armed-p{tracer.pid}").touch()
    except OSError:
        pass
    register_optimizer_step_post_hook(tracer.on_optimizer_step)
    base = torch_profiler._KinetoProfile
    original = base.prepare_trace

    def prepare_trace(self, *args, **kwargs):
        t = get()
        if t is not None and self is not t.prof:
            t.user_profiler_started(self)
        return original(self, *args, **kwargs)

    # a method patched on purpose: torch calls it when any profiler starts, the user's included
    base.prepare_trace = prepare_trace  # type: ignore[method-assign]
    atexit.register(tracer.at_exit)
    _tracer = tracer
    return tracer
