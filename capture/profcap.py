"""``profcap [options] -- CMD ...``: record an unmodified training run into a profui trace.

profcap writes the manifest (``running``), starts the sampling daemon, runs CMD in its own
process group with the bootstrap on ``PYTHONPATH``, forwards SIGINT/SIGTERM/SIGHUP to it, then
closes the manifest (``completed`` / ``failed`` / ``stopped``) and exits with CMD's exit code
(128+N when CMD died of signal N, as the shell reports it).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import platform
import queue
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from . import session as _session
from .format.liveness import this_host
from .format.regular import not_utf8
from .windows import DEFAULT_STEPS, Window, WindowPlan, parse_schedule, parse_steps

FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
STOP_SIGNALS = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}
READY_TIMEOUT_S = 30.0
RESERVE_NAME = ".profcap-reserve"
RESERVE_BYTES = 256 * 1024
#: The job id that makes the profcap runs of one job's nodes one trace (see :func:`job_id`).
JOB_ID_VAR = "PROFUI_JOB_ID"

EPILOG = """\
what you get:
  a trace folder (default ./trace/<name>-<YYYYmmdd-HHMMSS>/) with
    manifest.json                     command, status, exit code, hosts, GPUs, settings, notes
                                      (several nodes sharing -o: node=<host>/manifest.json each)
    node=<host>/metrics-*.parquet     CPU, memory, disk, network, job process tree, GPUs (NVML),
                                      CPU counters (perf), sampled --hz times a second
    node=<host>/rank=<r>/events-*.parquet
                                      torch.profiler windows (CPU ops, CUDA kernels, your
                                      annotations, ProfilerStep#N steps), one file per window
  Open it with `profui open TRACE` or `profui summary TRACE`.

steps:
  Steps are counted from 0 by the job's first optimizer's step() calls (or profui.capture.step()
  calls): step n ends at the (n+1)-th call. Step 0 cannot be traced. Without --steps or
  --schedule, steps 10-14 are traced.

examples:
  profcap -- python train.py                      trace steps 10-14, sample at 10 Hz
  profcap --steps 40-45 -- python train.py        trace steps 40 to 45 (inclusive)
  profcap --steps 10-12,500-502 -- python train.py
  profcap --schedule 5,1,3,2 -- python train.py   wait 5, warm up 1, trace 3 steps; twice
  profcap --no-trace --hz 2 -- ./run.sh           metrics only, 2 samples a second
  profcap -o runs/bert --name bert -- torchrun --nproc-per-node 8 train.py
  profcap --perf-events cache-misses,context-switches -- python train.py
  srun --ntasks-per-node 1 profcap -o /shared/trace/bert -- torchrun ... train.py
                                                  several nodes, one folder: Slurm's job and step
                                                  ids make the nodes' profcaps one job
  PROFUI_JOB_ID=bert-7 profcap -o /shared/trace/bert -- torchrun --nnodes 2 ... train.py
                                                  the same anywhere: run it on each node, with
                                                  one id; then `profui open /shared/trace/bert`
  srun bash -c 'profcap -o trace/bert-$(hostname) -- python train.py'
                                                  one folder per node: `profui open trace/bert-*`
                                                  opens them as one job

several nodes:
  With PROFUI_JOB_ID (else Slurm's SLURM_JOB_ID and SLURM_STEP_ID) set, profcap records the id in
  the manifest and keeps its manifest in node=<host>/ (merged on read), its spool and reserve to
  itself, so the profcaps of one job's nodes may share -o; a folder of another id, or one that
  already holds this node, is refused. --node names the node (default: this host's name).

in your script (optional; works without profcap too):
  from profui.capture import annotate, step
  with annotate("forward"): ...                   named ranges on the timeline
  @annotate("load_batch")                         ... or as a decorator
  step()                                          mark steps in loops without a torch optimizer

profcap exits with the job's exit code (128+N when it died of signal N); a job ended by SIGINT,
SIGTERM or SIGHUP is 'stopped', any other non-zero end 'failed'. At a terminal the job can read it (pdb, input()) and Ctrl-C / Ctrl-Z reach it as
usual; SIGTERM sent to profcap is forwarded. Elsewhere (batch jobs, nohup, CI) SIGINT, SIGTERM and
SIGHUP sent to profcap are forwarded to the job's process group. A third one kills the job.
Jobs run with `python -S`, `-I` or `-E` skip the bootstrap: they get metrics but no trace.
"""


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="profcap",
        usage="profcap [options] -- CMD [ARGS...]",
        description="Record an unmodified training run (GPU/CPU metrics and torch.profiler windows) "
        "into a profui trace folder.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "-o", "--output", metavar="DIR", help="trace folder to create (default ./trace/<name>-<time>/)"
    )
    p.add_argument("--name", help="job name (default: the script or command name)")
    p.add_argument("--node", help="node name in the trace (default: this host's name)")
    p.add_argument("--hz", type=float, default=10.0, help="metric samples per second (default 10)")
    win = p.add_mutually_exclusive_group()
    win.add_argument(
        "--steps", metavar="A-B[,C-D]", help="training steps to trace, inclusive (default 10-14)"
    )
    win.add_argument(
        "--schedule",
        metavar="WAIT,WARMUP,ACTIVE[,REPEAT]",
        help="torch.profiler-style schedule from step 1; REPEAT 0 = until the end (default 1)",
    )
    win.add_argument("--no-trace", action="store_true", help="metrics only: do not trace the job's processes")
    p.add_argument(
        "--perf-events",
        metavar="EV[,EV]",
        default="",
        help="extra perf events per CPU, besides cycles and instructions",
    )
    p.add_argument("--no-perf", action="store_true", help="do not run perf stat")
    p.add_argument(
        "--memory",
        action="store_true",
        help="record the allocator's memory events in the traced windows (torch.profiler profile_memory)",
    )
    p.add_argument("command", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    return p


def job_name(cmd: list[str]) -> str:
    """A short name for the job: the Python script or module it runs, else the program."""
    args = list(cmd)
    while args and os.path.basename(args[0]).startswith(("python", "torchrun", "accelerate", "deepspeed")):
        rest = args[1:]
        if "-m" in rest[:-1] and os.path.basename(args[0]).startswith("python"):
            mod = rest[rest.index("-m") + 1]
            if mod not in ("torch.distributed.run", "torch.distributed.launch"):
                return mod.split(".")[-1]
            rest = rest[rest.index("-m") + 2 :]
        scripts = [a for a in rest if not a.startswith("-") and a.endswith(".py")]
        if scripts:
            return Path(scripts[0]).stem
        args = [a for a in rest if not a.startswith("-")]
    return Path(cmd[0]).name if cmd else "job"


def _versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for dist in ("profui", "torch", "nvidia-ml-py", "psutil", "pyarrow"):
        try:
            out[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            pass
    return out


def _say(msg: str) -> None:
    """One line on stderr, if anyone still reads it. A reader that has gone (``2>&1 | head``, a
    dead log shipper) must not stop the capture, let alone the job: after the first failed
    write profcap's stderr is /dev/null (the manifest's notes keep what it would have said; the
    interpreter's own last flush at exit would raise again otherwise)."""
    try:
        sys.stderr.write(f"profcap: {msg}\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        try:
            sys.stderr = open(os.devnull, "w")  # noqa: SIM115 - lives as long as the process
        except OSError:
            pass


class Capture:
    """One profcap run: manifest, daemon, job, signals, finalisation."""

    def __init__(self, args: argparse.Namespace, cmd: list[str], plan: WindowPlan | None) -> None:
        from .format import Manifest

        self.args = args
        self.cmd = cmd
        self.plan = plan
        self.node = _session_node(args.node)
        self.name = args.name or job_name(cmd)
        stamp = time.strftime("%Y%m%d-%H%M%S")
        if args.output:
            self.trace_dir = Path(args.output)
        else:  # two jobs of one name started in the same second get -2, -3, ...
            base = Path("trace") / f"{self.name}-{stamp}"
            self.trace_dir = base
            n = 1
            while self.trace_dir.exists():
                n += 1
                self.trace_dir = base.with_name(f"{base.name}-{n}")
        self.job_id = job_id()
        if self.job_id is None:
            self.manifest_dir = self.trace_dir
            self.spool = self.trace_dir / ".spool"
            self.reserve = self.trace_dir / RESERVE_NAME
        else:  # one node of a job whose nodes share the folder: nothing of this node's is shared
            from .format import node_dir

            self.manifest_dir = node_dir(self.trace_dir, self.node)
            self.spool = self.trace_dir / f".spool-{self.node}"
            self.reserve = self.trace_dir / f"{RESERVE_NAME}-{self.node}"
        self.stop_signal: int | None = None
        self.signals_seen = 0
        # At a terminal the job shares profcap's process group, so it can read the terminal (pdb,
        # input()) and Ctrl-C / Ctrl-Z reach it directly; elsewhere it gets a group of its own and
        # every stop signal is forwarded to that group.
        self.interactive = _foreground_tty() is not None
        self.job: subprocess.Popen | None = None
        self.daemon: subprocess.Popen | None = None
        self.daemon_lines: queue.Queue[str | None] = queue.Queue()
        self.daemon_dead_noted = False
        perf_events = ["cycles", "instructions"] + [e for e in args.perf_events.split(",") if e.strip()]
        self.perf_events = list(dict.fromkeys(e.strip() for e in perf_events))
        self.manifest = Manifest(
            name=self.name,
            command=list(cmd),
            start_ns=time.time_ns(),
            hosts=[self.node],
            versions=_versions(),
            capture={
                "tool": "profcap",
                "pid": os.getpid(),  # a reader can tell a capture killed outright from a live one
                "host": this_host(),
                "hz": args.hz,
                "trace": plan is not None,
                "windows": [],
                "plan": plan.to_config() if plan is not None else None,
                "record_shapes": True,
                "profile_memory": bool(args.memory),
                "perf_events": [] if args.no_perf else self.perf_events,
            },
        )
        if self.job_id is not None:
            self.manifest.capture["job_id"] = self.job_id

    # -- manifest -------------------------------------------------------------------
    def write_manifest(self) -> None:
        """Write the manifest (best effort once running: a full disk must not stop the job)."""
        from .format import write_manifest

        write_manifest(self.manifest_dir, self.manifest)

    def write_job_manifest(self) -> None:
        """A node of a shared job: the folder's own manifest, which says that each node keeps
        its manifest in ``node=<host>/`` (merged on read). Every node writes the same, whole."""
        from .format import Manifest, write_manifest

        shared = Manifest(
            name=self.name,
            command=list(self.cmd),
            start_ns=self.manifest.start_ns,
            capture={"tool": "profcap", "job_id": self.job_id, "per_node": True},
        )
        write_manifest(self.trace_dir, shared)

    def _write_manifest_quietly(self) -> bool:
        try:
            self.write_manifest()
        except OSError as exc:
            _say(f"could not update {self.manifest_dir / 'manifest.json'}: {exc}")
            return False
        return True

    def output_refused(self) -> str | None:
        """Why ``-o`` cannot take this capture, or None. Alone, the folder must be new or empty;
        a node of a shared job (:func:`job_id`) may join a folder of the same job id that does not
        hold its node yet."""
        d = self.trace_dir
        if self.job_id is None:
            if d.exists() and (not d.is_dir() or any(d.iterdir())):
                return f"{d}: already exists and is not an empty folder; choose another -o"
            return None
        if d.exists() and not d.is_dir():
            return f"{d}: already exists and is not a folder; choose another -o"
        if self.manifest_dir.exists():
            return f"{d}: already holds node {self.node}; choose another -o (or --node)"
        if d.is_dir():
            # the nodes of one job start at once: another may be making its files (its node, its
            # hidden spool and reserve, the manifest being written under a hidden temporary name)
            if any(not (c.name.startswith((".", "node=")) or c.name == "manifest.json") for c in d.iterdir()):
                return f"{d}: already exists and is not an empty folder; choose another -o"
        top = d / "manifest.json"
        if top.is_file():
            try:
                data = json.loads(top.read_bytes())
                theirs = data["capture"]["job_id"]
            except (OSError, ValueError, KeyError, TypeError):
                theirs = None
            if theirs != self.job_id:
                return f"{d}: holds another capture (job id {theirs}, this one's is {self.job_id}); choose another -o"
        return None

    def _undo_start(self, created: list[Path]) -> None:
        if self.job_id is None:
            _remove_created(self.trace_dir, created)
            return
        for own in (self.spool, self.manifest_dir):  # never another node's files
            shutil.rmtree(own, ignore_errors=True)
        _release(self.reserve)
        for folder in reversed(created):
            try:
                folder.rmdir()
            except OSError:
                pass

    # -- daemon ---------------------------------------------------------------------
    def start_daemon(self) -> None:
        """Start the daemon and wait for its ready line (GPUs, what it skips)."""
        cfg = {
            "trace_dir": str(self.trace_dir),
            "spool": str(self.spool),
            "node": self.node,
            "hz": self.args.hz,
            "perf": not self.args.no_perf,
            "perf_events": self.perf_events,
            "manifest_dir": str(self.manifest_dir),
            "reserve": str(self.reserve),
        }
        try:
            self.daemon = subprocess.Popen(
                [sys.executable, "-m", "profui.capture.daemon", json.dumps(cfg)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
                start_new_session=True,
            )
        except OSError as exc:
            self._note(
                f"sampling daemon did not start ({exc}): no metrics, no trace conversion by the daemon"
            )
            return
        threading.Thread(target=self._read_daemon, name="daemon-reader", daemon=True).start()
        try:
            line = self.daemon_lines.get(timeout=READY_TIMEOUT_S)
        except queue.Empty:
            line = None
        ready = _json(line)
        if not ready.get("ready"):
            self._note("sampling daemon did not report ready: metrics may be missing")
            return
        self.manifest.gpus = ready.get("gpus") or []
        if ready.get("driver"):
            self.manifest.versions["nvidia_driver"] = ready["driver"]
        for note in ready.get("notes") or []:
            self._note(note)

    def _read_daemon(self) -> None:
        assert self.daemon is not None and self.daemon.stdout is not None
        for line in self.daemon.stdout:
            self.daemon_lines.put(line)
        self.daemon_lines.put(None)

    def _tell_daemon(self, text: str) -> None:
        if self.daemon is None or self.daemon.poll() is not None or self.daemon.stdin is None:
            return
        try:
            self.daemon.stdin.write(text + "\n")
            self.daemon.stdin.flush()
        except OSError:
            pass

    def _watch_daemon(self) -> None:
        assert self.daemon is not None
        self.daemon.wait()
        if self.job is not None and self.job.poll() is None:
            self._check_daemon()

    def _check_daemon(self) -> None:
        if self.daemon is not None and not self.daemon_dead_noted and self.daemon.poll() is not None:
            self.daemon_dead_noted = True
            self._note(
                f"sampling daemon died (exit {self.daemon.returncode}) at {time.strftime('%H:%M:%S')}: "
                "no metrics after that; profcap converts the trace windows at the end"
            )
            self._write_manifest_quietly()

    def _note(self, text: str) -> None:
        if text not in self.manifest.notes:
            self.manifest.notes.append(text)
            _say(text)

    # -- job --------------------------------------------------------------------------
    def job_env(self) -> dict[str, str]:
        """The job's environment: ours plus the bootstrap (never recorded anywhere)."""
        env = dict(os.environ)
        if self.plan is None:
            return env
        from . import bootstrap

        boot = str(Path(bootstrap.__file__).resolve().parent)
        env["PYTHONPATH"] = boot + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        env[_session.ENV_VAR] = _session.encode(
            self.spool.resolve(), self.node, self.plan.to_config(), memory=bool(self.args.memory)
        )
        return env

    def _forward(self, signum: int, _frame: Any) -> None:
        if self.job is not None and _ended(self.job):
            # it came after the job's end (exit 0 is still 'completed'); one during the final
            # conversion interrupts that (:meth:`_await_result`)
            return
        if self.stop_signal is None:
            self.stop_signal = signum
        self.signals_seen += 1
        if self.job is None:
            return
        # a job that ignores two requests to stop is killed at the third
        sig = signal.SIGKILL if self.signals_seen >= 3 else signum
        if self.signals_seen == 2:
            _say("a third signal kills the job")
        try:
            if not self.interactive:
                os.killpg(self.job.pid, sig)
            elif sig not in (signal.SIGINT, signal.SIGHUP):  # the terminal sent those to the job already
                os.kill(self.job.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    def run(self) -> int:
        """Run the whole capture; return profcap's exit code."""
        refused = self.output_refused()
        if refused:
            _say(refused)
            return 2
        # from here on nothing stops the job: a trace that cannot be written costs the trace only
        created = _missing_folders(self.trace_dir)
        existing = created[0].parent if created else self.trace_dir.absolute()
        short = not_utf8(self.trace_dir.absolute()) or _short_of_space(existing)
        if short:
            return self.run_uncaptured(f"{self.trace_dir}: {short}")
        try:
            self.spool.mkdir(parents=True, exist_ok=True)
            if self.job_id is not None:
                self.manifest_dir.mkdir(parents=True)
                self.write_job_manifest()
            self.write_manifest()
            # room kept for the final manifest, should the disk fill up during the run
            self.reserve.write_bytes(bytes(RESERVE_BYTES))
        except OSError as exc:
            self._undo_start(created)
            return self.run_uncaptured(
                f"{self.trace_dir}: cannot write the trace here ({exc.strerror or exc})"
            )
        if self.plan is None:
            self._note("tracing off (--no-trace): metrics only")
        self.start_daemon()
        self._write_manifest_quietly()
        job = self._start_job(self.job_env())
        if isinstance(job, tuple):
            code, why = job
            self._note(f"the command could not be started: {why}")
            self.finish(code, "failed")
            return code
        self._tell_daemon(f"job {job.pid}")
        if self.daemon is not None:
            threading.Thread(target=self._watch_daemon, name="daemon-watch", daemon=True).start()
        rc = job.wait()  # blocks in waitpid; forwarded signals still run their handler
        code = _exit_code(rc)
        if self.stop_signal is not None or (rc < 0 and -rc in STOP_SIGNALS):
            status = "stopped"
        elif rc == 0:
            status = "completed"
        else:
            status = "failed"
            if rc < 0:
                self._note(f"the job was killed by {signal.Signals(-rc).name}")
        self.finish(code, status)
        return code

    def run_uncaptured(self, why: str) -> int:
        """Run the job as if profcap were not there (signals still reach it); its exit code."""
        _say(f"{why}; running the job without capture")
        job = self._start_job(None)
        return job[0] if isinstance(job, tuple) else _exit_code(job.wait())

    def _start_job(self, env: dict[str, str] | None) -> subprocess.Popen | tuple[int, str]:
        """Start the job with stop signals forwarded to it; the job, or (exit code, why) when the
        command cannot be started (127: not found, 126: not runnable)."""
        for sig in FORWARDED:
            signal.signal(sig, self._forward)
        try:
            if self.interactive:
                self.job = subprocess.Popen(self.cmd, env=env)
            elif sys.version_info >= (3, 11):
                self.job = subprocess.Popen(self.cmd, env=env, process_group=0)
            else:  # Popen has no process_group before 3.11: the same setpgid(0, 0) in the child
                self.job = subprocess.Popen(self.cmd, env=env, preexec_fn=os.setpgrp)
        except OSError as exc:
            why = exc.strerror or str(exc)
            _say(f"{self.cmd[0]}: {why}")
            return (127 if isinstance(exc, FileNotFoundError) else 126), why
        return self.job

    def finish(self, code: int, status: str) -> None:
        """Stop the daemon (it drains the spool), then close the manifest."""
        from .daemon import spool as _spool
        from .manifest_end import finish_manifest

        result: dict[str, Any] | None = None
        if self.daemon is not None and self.daemon.poll() is None:
            waiting = sum(1 for p in _spool.pending(self.spool) if p.name.endswith(_session.KINETO_SUFFIX))
            if waiting:
                _say(f"converting {waiting} trace window(s)...")
            self._tell_daemon("stop")
            result = self._await_result()
        else:
            self._check_daemon()
        if result is None:
            result = self._convert_here()
        if self.plan is not None and not any("lost" in n for n in result.get("notes", [])):
            first = self.plan.window(0)
            why = _spool.why_no_windows(
                self.spool, result.get("windows", []), (first.first, first.last) if first else None
            )
            if why:
                self._note(why)
        said = list(self.manifest.notes)
        finish_manifest(self.manifest, self.manifest_dir, result, status=status, exit_code=code)
        _spool.cleanup(self.spool)
        _release(self.reserve)
        if not self._write_manifest_quietly():
            for note in self.manifest.notes:  # the daemon's notes: stderr is all that is left
                if note not in said:
                    _say(note)
        events = sum(1 for _ in self.trace_dir.glob("node=*/rank=*/events-*.parquet"))
        metrics = sum(1 for _ in self.trace_dir.glob("node=*/metrics-*.parquet"))
        _say(
            f"{status} (exit {code}); trace: {self.trace_dir} ({events} events files, {metrics} metrics files)"
        )

    def _await_result(self) -> dict[str, Any] | None:
        from .daemon import spool as _spool

        interrupted = []

        def on_signal(signum: int, _frame: Any) -> None:
            interrupted.append(signum)

        for sig in FORWARDED:
            signal.signal(sig, on_signal)
        while True:
            if interrupted and self.daemon is not None:
                _kill_group(self.daemon)
                _remove_unfinished_writes(self.trace_dir)
                # a window whose converter published it just before is in the trace: said so
                _spool.settle_published(self.spool, self.trace_dir, self.node)
                left = sum(1 for p in _spool.pending(self.spool) if p.name.endswith(_session.KINETO_SUFFIX))
                self._note(
                    f"profcap was interrupted while converting: {left} unconverted window(s) stay in "
                    f"{self.spool} (import them with `profui import`)"
                )
                # what the daemon converted before is in the trace; the rest is left as the
                # note says (a result, so finish does not convert it after all)
                return {"notes": [], "windows": _spool.done_windows(self.spool)}
            try:
                line = self.daemon_lines.get(timeout=0.5)
            except queue.Empty:
                continue
            if line is None:
                self._check_daemon()
                return None
            data = _json(line)
            if "result" in data:
                if self.daemon is not None:
                    self.daemon.wait()
                return data["result"]

    def _convert_here(self) -> dict[str, Any]:
        """The daemon is gone: convert what is left in the spool in this process."""
        from .daemon import spool as _spool

        result: dict[str, Any] = {"notes": [], "windows": []}
        for path in _spool.pending(self.spool):
            try:
                out, err = _spool.convert_file(path, self.trace_dir, self.node), None
            except Exception as exc:
                out, err = None, repr(exc)
            info, note = _spool.finish_file(path, out, err)
            if info is not None:
                result["windows"].append(info)
            if note:
                result["notes"].append(note)
        result["notes"].extend(_spool.take_notes(self.spool))
        result["notes"].extend(_spool.lost_windows(self.spool))
        # the windows the dead daemon converted before are in the trace too
        result["windows"] = _spool.done_windows(self.spool)
        return result


def _foreground_tty() -> int | None:
    """stdin's terminal when profcap runs in its foreground (interactive use), else None."""
    try:
        fd = sys.stdin.fileno()
        if os.isatty(fd) and os.tcgetpgrp(fd) == os.getpgrp():
            return fd
    except (OSError, ValueError):
        pass
    return None


def _ended(proc: subprocess.Popen) -> bool:
    """Whether ``proc`` has ended, reaped or not (a zombie is left as it is, for its ``wait``)."""
    if proc.returncode is not None:
        return True
    try:
        return os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:  # reaped meanwhile
        return True


def _exit_code(rc: int) -> int:
    """A job's return code as a shell reports it (killed by signal N: 128 + N)."""
    return 128 - rc if rc < 0 else rc


def _short_of_space(folder: Path) -> str | None:
    """Why the disk of the existing ``folder`` the trace will be made in cannot take a trace
    (less free than the room kept for the final manifest, twice over), or None."""
    try:
        free = shutil.disk_usage(folder).free
    except OSError:
        return None  # the writes that follow say what is wrong
    if free < 2 * RESERVE_BYTES:
        return f"only {free // 1024} KiB free on its disk (a trace needs at least {2 * RESERVE_BYTES // 1024} KiB)"
    return None


def _missing_folders(path: Path) -> list[Path]:
    """``path`` and the ancestors of it that do not exist yet, outermost first."""
    out: list[Path] = []
    p = path.absolute()
    while not p.exists() and p != p.parent:
        out.append(p)
        p = p.parent
    return out[::-1]


def _remove_created(trace_dir: Path, created: list[Path]) -> None:
    """Undo a start that failed half way: what profcap made under ``trace_dir``, and the folders
    it created for it (an existing empty folder given as ``-o`` is left, emptied: it was empty
    when profcap started, or profcap would have refused it)."""
    try:
        children = list(trace_dir.iterdir())
    except OSError:
        children = []
    for child in children:
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child, ignore_errors=True)
        else:
            _release(child)
    for folder in reversed(created):
        try:
            folder.rmdir()
        except OSError:
            pass


def _kill_group(proc: subprocess.Popen) -> None:
    """Kill the daemon with its converter child (its own session's group): a converter left
    running would publish a window after the manifest said it stayed unconverted."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()
    proc.wait()


def _remove_unfinished_writes(trace_dir: Path) -> None:
    """Remove the files a killed converter was writing when it died (their temporary names:
    what it finished is renamed into place, never partial)."""
    from .format.atomic import temporaries

    for pattern in ("node=*/rank=*/events-*.parquet", "node=*/metrics-*.parquet"):
        for left in temporaries(trace_dir, pattern):
            try:
                left.unlink()
            except OSError:
                pass


def _release(path: Path) -> None:
    try:
        path.unlink()
    except OSError:
        pass


def _json(line: str | None) -> dict[str, Any]:
    if not line:
        return {}
    try:
        data = json.loads(line)
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def job_id() -> str | None:
    """The id that makes several profcap runs one job: ``$PROFUI_JOB_ID``, else Slurm's job and
    step (``srun profcap -o shared/ ...`` on every node); None alone. With one, each node keeps
    its manifest, spool and reserve to itself (``node=<host>/manifest.json``) and the nodes of one
    job may share ``-o``."""
    explicit = os.environ.get(JOB_ID_VAR, "").strip()
    if explicit:
        return explicit
    slurm, step = os.environ.get("SLURM_JOB_ID", "").strip(), os.environ.get("SLURM_STEP_ID", "").strip()
    return f"slurm-{slurm}.{step}" if slurm and step else None


def _session_node(name: str | None = None) -> str:
    from .format import safe_node_name

    return safe_node_name(name or socket.gethostname())


def build_plan(args: argparse.Namespace) -> WindowPlan | None:
    """The window plan from the options (None with --no-trace); raise ValueError if bad."""
    if args.no_trace:
        return None
    if args.schedule:
        return WindowPlan(schedule=parse_schedule(args.schedule))
    if args.steps:
        return WindowPlan(windows=parse_steps(args.steps))
    return WindowPlan(windows=[Window(*DEFAULT_STEPS)])


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``profcap`` console script."""
    parser = _parser()
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    cmd = list(args.command)
    if cmd and cmd[0] == "--":
        cmd = cmd[1:]
    if not cmd:
        parser.print_usage(sys.stderr)
        _say("no command given: profcap [options] -- CMD [ARGS...]  (see profcap --help)")
        raise SystemExit(2)
    if args.hz <= 0 or args.hz > 1000:
        _say(f"--hz {args.hz}: must be above 0 and at most 1000")
        raise SystemExit(2)
    try:
        plan = build_plan(args)
    except ValueError as exc:
        _say(str(exc))
        raise SystemExit(2) from None
    raise SystemExit(Capture(args, cmd, plan).run())


if __name__ == "__main__":
    main()
