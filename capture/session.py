"""The capture session as seen from inside the job: where to hand data, which rank this is.

profcap passes its settings to the job in one environment variable, ``PROFUI_CAPTURE`` (JSON).
Processes started outside profcap have no session, and the annotation API then does nothing.
Pure standard library: imported inside training processes.
"""

from __future__ import annotations

import atexit
import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from profui.capture.format.liveness import pid_alive

ENV_VAR = "PROFUI_CAPTURE"
#: Spool file suffixes: Kineto Chrome traces, profui's own recorder, window markers, notes.
KINETO_SUFFIX = ".kineto.json"
EVENTS_SUFFIX = ".events.json"
OPEN_SUFFIX = ".open"
FAILED_SUFFIX = ".failed"
NOTE_SUFFIX = ".note"

_RANK_VARS = ("RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID")


@dataclass(frozen=True)
class Session:
    """Settings of the running capture, decoded from ``PROFUI_CAPTURE``."""

    spool: Path
    node: str
    plan: dict
    trace: bool = True
    #: torch.profiler's ``profile_memory``: the allocator's [memory] events (profcap --memory).
    memory: bool = False

    def spool_name(self, rank: int, pid: int, seq: int, suffix: str) -> Path:
        """A unique spool path for one hand-over from process ``pid`` of ``rank``."""
        return self.spool / f"r{rank}-p{pid}-{seq:04d}{suffix}"

    def window_marker(self, rank: int, pid: int, seq: int, first: int, last: int | None) -> Path:
        """The ``.open`` marker of a window being recorded. Its steps are in its name, not its
        text: making it empty, and renaming it (:func:`failed_marker`), need no free space, so a
        window lost to a full disk is still told."""
        span = f"{first}-{'' if last is None else last}"
        return self.spool / f"r{rank}-p{pid}-{seq:04d}.steps{span}{OPEN_SUFFIX}"

    def note(self, text: str) -> None:
        """Leave one line for the manifest's notes. When the spool takes no file now (read-only,
        full) the line goes to stderr, and to the spool at the next note or at exit, should it
        take one by then."""
        line = text.strip()
        if _leave(self.spool, line):
            _leave_unsaid()
            return
        _unsaid.append((self.spool, line))
        try:
            sys.stderr.write(f"profcap: {line}\n")
        except (OSError, ValueError):
            pass


#: Notes the spool did not take when they were made: (spool, line).
_unsaid: list[tuple[Path, str]] = []


def _leave(spool: Path, line: str) -> bool:
    """Write one note into the spool whole (the daemon reads and removes ``.note`` files)."""
    path = spool / f"n-p{os.getpid()}-{time.time_ns()}{NOTE_SUFFIX}"
    tmp = path.with_name(path.name + ".tmp")
    try:
        tmp.write_text(line + "\n")
        os.replace(tmp, path)
    except OSError:
        try:
            tmp.unlink()
        except OSError:
            pass
        return False
    return True


def _leave_unsaid() -> None:
    """Try the notes the spool did not take again (they were said on stderr already)."""
    while _unsaid and _leave(*_unsaid[0]):
        _unsaid.pop(0)


# registered first, so it runs after the tracer's and the recorder's exit hooks and their notes
atexit.register(_leave_unsaid)


def lost_window(rank: int, pid: int, first: int | None, last: int | None, why: str) -> str:
    """The note of a trace window that never reached the trace, and why."""
    steps = f"steps {first}-{last}" if last is not None else f"from step {first}"
    return f"rank {rank} pid {pid}: trace window ({steps}) {why}; it is lost"


def current() -> Session | None:
    """The session of this process, or None outside profcap."""
    raw = os.environ.get(ENV_VAR)
    if not raw:
        return None
    try:
        cfg = json.loads(raw)
        return Session(
            Path(cfg["spool"]),
            str(cfg["node"]),
            dict(cfg.get("plan") or {}),
            bool(cfg.get("trace", True)),
            cfg.get("memory") is True,
        )
    except (ValueError, KeyError, TypeError):
        return None


def encode(spool: Path, node: str, plan: dict, trace: bool = True, memory: bool = False) -> str:
    """The ``PROFUI_CAPTURE`` value profcap puts in the job's environment."""
    return json.dumps({"spool": str(spool), "node": node, "plan": plan, "trace": trace, "memory": memory})


def rank() -> int:
    """This process's global rank from torchrun/MPI/Slurm variables (0 when none is set)."""
    for var in _RANK_VARS:
        value = os.environ.get(var)
        if value is not None:
            try:
                return int(value)
            except ValueError:
                continue
    return 0


def parse_spool_name(name: str) -> tuple[int, int, int] | None:
    """(rank, pid, seq) of a spool file name made by :meth:`Session.spool_name`."""
    stem = name.split(".", 1)[0]
    parts = stem.split("-")
    if len(parts) != 3 or parts[0][:1] != "r" or parts[1][:1] != "p":
        return None
    try:
        return int(parts[0][1:]), int(parts[1][1:]), int(parts[2])
    except ValueError:
        return None


def failed_marker(marker: Path, errno: int | None) -> Path:
    """The name a window's ``.open`` marker is renamed to when the window could not be handed
    over, with the error's number when known."""
    stem = marker.name[: -len(OPEN_SUFFIX)]
    return marker.with_name(stem + (f".e{errno}" if errno else "") + FAILED_SUFFIX)


def marker_info(name: str) -> tuple[int | None, int | None, int | None]:
    """(first step, last step, error number) of a window marker's name (:meth:`Session.window_marker`,
    :func:`failed_marker`); None for what it does not say."""
    first = last = errno = None
    for part in name.split(".")[1:]:
        if part.startswith("steps"):
            lo, _, hi = part[5:].partition("-")
            first = int(lo) if lo.isdigit() else None
            last = int(hi) if hi.isdigit() else None
        elif part[:1] == "e" and part[1:].isdigit():
            errno = int(part[1:])
    return first, last, errno


def claim_rank(session: Session, rank_: int) -> bool:
    """Become the one traced process of ``rank_`` on this node.

    The first process of a rank to step an optimizer wins; a claim by a process that has since
    exited can be taken over (so sequential scripts of one job are each traced). ``OSError``
    when the spool takes no claim (read-only...).
    """
    path = session.spool / f"owner-r{rank_}"
    me = os.getpid()
    for _ in range(2):
        try:
            # a link made exclusively holds the pid in itself: no free space needed (a full
            # disk would leave a file without its pid, and an error that stopped tracing)
            os.symlink(str(me), path)
        except FileExistsError:
            try:
                holder = int(os.readlink(path) or "0")
            except (OSError, ValueError):
                return False
            if holder == me:
                return True
            if holder and pid_alive(holder):
                return False
            try:
                path.unlink()
            except FileNotFoundError:
                pass
            continue
        return True
    return False
