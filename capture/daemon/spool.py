"""The spool folder: what the job's processes hand to the daemon, and turning it into the trace.

Files (named ``r<rank>-p<pid>-<seq><suffix>``, see :mod:`profui.capture.session`):
``.kineto.json`` a Kineto Chrome trace of one window (+ ``.meta`` with its steps and stall),
``.events.json`` events of profui's own recorder, ``.open`` a window being recorded, ``.note``
a line for the manifest. Writers rename complete files into place, so a file seen is whole.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from .. import session as _session
from ..format.liveness import pid_alive
from . import once as _once

FAILED_DIR = "failed"
#: Windows converted so far, one JSON object a line (see :func:`done_windows`).
DONE_WINDOWS = "windows-done.jsonl"


def pending(spool: Path) -> list[Path]:
    """Complete hand-overs waiting for conversion, oldest first."""
    try:
        names = os.listdir(spool)
    except OSError:
        return []
    files = [spool / n for n in names if n.endswith((_session.KINETO_SUFFIX, _session.EVENTS_SUFFIX))]
    return sorted(files, key=lambda p: (_mtime(p), p.name))


def _mtime(p: Path) -> float:
    try:
        return p.stat().st_mtime
    except OSError:
        return 0.0


def take_notes(spool: Path) -> list[str]:
    """Read and remove the notes processes left in the spool."""
    notes: list[str] = []
    try:
        names = sorted(n for n in os.listdir(spool) if n.endswith(_session.NOTE_SUFFIX))
    except OSError:
        return []
    for n in names:
        try:
            notes.extend(line for line in (spool / n).read_text().splitlines() if line.strip())
            (spool / n).unlink()
        except OSError:
            pass
    return notes


def lost_windows(spool: Path) -> list[str]:
    """Notes for windows that never reached the trace: their process ended while recording them
    (``.open`` markers left), or they could not be written (``.failed`` markers, e.g. disk full;
    or an ``.open`` marker left in a spool that cannot be written any more, e.g. read-only)."""
    notes = []
    unwritable: list[str | None] = []  # why the spool takes no file now, once asked
    try:
        names = sorted(
            n for n in os.listdir(spool) if n.endswith((_session.OPEN_SUFFIX, _session.FAILED_SUFFIX))
        )
    except OSError:
        return []
    for n in names:
        ids = _session.parse_spool_name(n)
        failed = n.endswith(_session.FAILED_SUFFIX)
        if ids is None or (not failed and pid_alive(ids[1])):
            continue
        first, last, errno = _session.marker_info(n)
        if failed:
            why = f"could not be written to the spool ({os.strerror(errno) if errno else 'disk full?'})"
        else:
            if not unwritable:
                unwritable.append(_unwritable(spool))
            why = (
                f"could not be written: the spool {spool} takes no file ({unwritable[0]})"
                if unwritable[0]
                else "was being recorded when the process ended"
            )
        notes.append(_session.lost_window(ids[0], ids[1], first, last, why))
        try:
            (spool / n).unlink()
        except OSError:
            pass
    return notes


def _unwritable(folder: Path) -> str | None:
    """Why no file can be made in ``folder`` now (e.g. "Read-only file system"), or None. Tried,
    not asked of os.access: root passes every permission check a read-only mount fails."""
    probe = folder / f".probe-p{os.getpid()}"
    try:
        probe.touch()
        probe.unlink()
    except OSError as exc:
        return exc.strerror or str(exc)
    return None


def convert_file(path: Path, trace_dir: Path, node: str) -> dict[str, Any]:
    """Convert one spool file into the trace (in this process); return what was written.

    Once only (:mod:`.once`): a hand-over whose events file is in the trace already (its
    converter's parent died before removing it) is not converted again, and one being converted
    by another process is waited for. ``FileNotFoundError`` when another converter finished it."""
    ids = _session.parse_spool_name(path.name)
    rank = ids[0] if ids else 0
    with _once.claimed(path) as here:
        if not here:
            raise FileNotFoundError(f"{path.name}: converted and removed by another converter")
        done = _once.published(path, trace_dir, node, rank)
        if done is not None:
            kind = "kineto" if path.name.endswith(_session.KINETO_SUFFIX) else "recorder"
            return {**done, "kind": kind}
        sha = _once.content_hash(path)
        return {**_convert(path, trace_dir, node, rank, sha), "sha256": sha}


def _convert(path: Path, trace_dir: Path, node: str, rank: int, sha: str) -> dict[str, Any]:
    if path.name.endswith(_session.KINETO_SUFFIX):
        from ..kineto.file_import import convert_kineto_file

        result = convert_kineto_file(path, trace_dir, node=node, rank=rank, note={"sha256": sha})
        events = getattr(result, "num_events", None)
        if events is None:
            events = getattr(result, "events", None)
        counts = getattr(result, "counts", None)
        gpus = getattr(result, "gpus", None)
        return {
            "rank": rank,
            "events": int(events) if isinstance(events, int) else None,
            "kind": "kineto",
            "counts": dict(counts) if isinstance(counts, dict) else {},
            "gpus": list(gpus) if isinstance(gpus, list) else [],
        }
    return _convert_recorded(path, trace_dir, node, rank, sha)


def _convert_recorded(path: Path, trace_dir: Path, node: str, rank: int, sha: str) -> dict[str, Any]:
    from ..format import to_table, write_events

    data = json.loads(path.read_bytes())
    events = data.get("events") or []
    pid = int(data.get("pid", 0))
    cols = {
        "ts": [int(e[0]) for e in events],
        "dur": [int(e[1]) for e in events],
        "kind": [str(e[2]) for e in events],
        "name": [str(e[3]) for e in events],
        "pid": [pid] * len(events),
        "tid": [int(e[4]) for e in events],
        "device": [-1] * len(events),
        "stream": [-1] * len(events),
    }
    write_events(
        trace_dir,
        node,
        int(data.get("rank", rank)),
        to_table("events", cols),
        # the file it came from, as every converter names it (:func:`.once.published`)
        extra_metadata={
            "profui.source": json.dumps({"file": str(path), "format": "profcap-recorder", "sha256": sha})
        },
    )
    return {"rank": rank, "events": len(events), "kind": "recorder"}


def convert_in_subprocess(path: Path, trace_dir: Path, node: str) -> tuple[dict[str, Any] | None, str | None]:
    """Convert one spool file in a child process (so the daemon keeps sampling meanwhile).

    Returns (result, None) or (None, the error's last line).
    """
    cmd = [sys.executable, "-m", "profui.capture.daemon.convert", str(path), str(trace_dir), node]
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    except OSError as exc:
        return None, str(exc)
    if res.returncode != 0:
        lines = [line for line in res.stderr.strip().splitlines() if line.strip()]
        return None, lines[-1] if lines else f"converter exited with {res.returncode}"
    try:
        return json.loads(res.stdout.strip().splitlines()[-1]), None
    except (ValueError, IndexError):
        return {}, None


def finish_file(
    path: Path, result: dict[str, Any] | None, error: str | None
) -> tuple[dict[str, Any] | None, str | None]:
    """After a conversion: remove the hand-over (or keep it under ``failed/``); return window info and a note."""
    meta_path = path.with_name(path.name + ".meta")
    meta: dict[str, Any] = {}
    try:
        meta = json.loads(meta_path.read_text())
    except (OSError, ValueError):
        pass
    if not isinstance(meta, dict):
        meta = {}
    ids = _session.parse_spool_name(path.name)
    if error is not None:
        if not path.exists():  # finished by another converter: nothing is lost, nothing to keep
            return None, None
        where = path  # where it stays when it cannot be moved (a read-only spool)
        try:
            (path.parent / FAILED_DIR).mkdir(exist_ok=True)
            where = Path(shutil.move(str(path), path.parent / FAILED_DIR / path.name))
        except OSError:
            pass
        return None, (
            f"rank {ids[0] if ids else '?'}: a trace window could not be converted ({error}); "
            f"the raw trace is kept at {where}"
        )
    info: dict[str, Any] | None = None
    if path.name.endswith(_session.KINETO_SUFFIX):
        info = {"rank": ids[0] if ids else None, "pid": ids[1] if ids else None, **meta}
        if result and result.get("events") is not None:
            info["events"] = result["events"]
            info["counts"] = result.get("counts", {})
            if result.get("gpus"):
                info["gpus"] = result["gpus"]
        # recorded before the hand-over goes: a converter killed in between leaves a hand-over
        # that is published and recorded, which the next one only removes. Known by name and
        # content: a later script reusing a pid hands over another window under the same name
        sha = result.get("sha256") if result else None
        if (path.name, sha) not in _recorded(path.parent):
            _record_done(path.parent, {**info, "spool": path.name, "sha256": sha})
    for p in (path, meta_path):
        try:
            p.unlink()
        except OSError:
            pass
    return info, None


def _record_done(spool: Path, info: dict[str, Any]) -> None:
    """Keep the window's info in the spool as well as in the converter's memory: a daemon
    killed after converting it would otherwise take the window out of the manifest with it."""
    try:
        with open(spool / DONE_WINDOWS, "a") as fh:
            fh.write(json.dumps(info, separators=(",", ":")) + "\n")
    except OSError:
        pass


def _recorded(spool: Path) -> set[tuple[str, str | None]]:
    """The hand-overs (name, content hash) whose windows :func:`_record_done` has recorded."""
    return {(w["spool"], w.get("sha256")) for w in _done_lines(spool) if w.get("spool") is not None}


def _done_lines(spool: Path) -> list[dict[str, Any]]:
    try:
        lines = (spool / DONE_WINDOWS).read_text().splitlines()
    except OSError:
        return []
    out = []
    for line in lines:
        try:
            info = json.loads(line)
        except ValueError:  # a line cut short by a kill
            continue
        if isinstance(info, dict):
            out.append(info)
    return out


def settle_published(spool: Path, trace_dir: Path, node: str) -> None:
    """Finish the hand-overs whose events are in the trace already (their converter was killed
    after publishing): recorded (:func:`done_windows`) and removed. The rest stay, unconverted."""
    for path in pending(spool):
        ids = _session.parse_spool_name(path.name)
        done = _once.published(path, trace_dir, node, ids[0] if ids else 0)
        if done is not None:
            finish_file(path, done, None)


def done_windows(spool: Path) -> list[dict[str, Any]]:
    """Every window converted into the trace so far, by the daemon or by profcap, in order,
    each once."""
    out, seen = [], set()
    for info in _done_lines(spool):
        key = (info.pop("spool", None), info.pop("sha256", None))
        if key[0] is None or key not in seen:
            seen.add(key)
            out.append(info)
    return out


def why_no_windows(
    spool: Path, windows: list[dict[str, Any]], first_window: tuple[int, int] | None
) -> str | None:
    """A note saying why tracing produced no window, when it produced none."""
    if any(w.get("first") is not None for w in windows):
        return None
    try:
        names = os.listdir(spool)
    except OSError:
        names = []
    if not any(n.startswith("armed-p") for n in names):
        return (
            "no trace windows: no Python process of the job imported torch "
            "(metrics only, plus profui.capture annotations if the job made any)"
        )
    reached = []
    for n in names:
        if n.startswith("steps-r"):
            try:
                info = json.loads((spool / n).read_text())
            except (OSError, ValueError):
                continue
            if info.get("backed_off"):
                return None  # said in its own note
            reached.append(int(info.get("steps", 0)))
    if not reached:
        return (
            "no trace windows: torch was imported but no optimizer step (or profui.capture.step() call) "
            "was seen, or the process ended abruptly"
        )
    if first_window and max(reached) >= first_window[0]:
        return None  # the window was due: its loss is said in its own note
    where = f" (steps {first_window[0]}-{first_window[1]})" if first_window else ""
    return (
        f"no trace windows: the job ran {max(reached)} steps and ended before its first window{where}; "
        "choose earlier steps with --steps"
    )


def cleanup(spool: Path) -> None:
    """Remove rank claims, markers and the spool folder itself when nothing is left in it."""
    try:
        for n in os.listdir(spool):
            if n.startswith(("owner-r", "armed-p", "steps-r")) or n.endswith(".tmp") or n == DONE_WINDOWS:
                try:
                    (spool / n).unlink()
                except OSError:
                    pass
        spool.rmdir()
    except OSError:
        pass
