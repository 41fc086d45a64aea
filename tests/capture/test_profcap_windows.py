"""Step windows (--steps, --schedule) and the spool's naming and rank claims."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from profui.capture import session
from profui.capture.windows import Schedule, Window, WindowPlan, parse_schedule, parse_steps


def test_parse_steps_ranges_and_singles():
    assert parse_steps("40-45") == [Window(40, 45)]
    assert parse_steps("100-104, 10-14,7") == [Window(7, 7), Window(10, 14), Window(100, 104)]
    for bad in ("a-b", "5-2", "0-3", "3-5,4-6", ""):
        with pytest.raises(ValueError):
            parse_steps(bad)


def test_schedule_windows_follow_torch_semantics():
    s = parse_schedule("2,1,3,2")
    assert s == Schedule(2, 1, 3, 2)
    # period 6 from step 1: wait 1-2, warm up 3, trace 4-6; wait 7-8, warm up 9, trace 10-12
    assert [s.window(k) for k in range(3)] == [Window(4, 6, 1), Window(10, 12, 1), None]
    assert s.window(0).arm_at == 3
    forever = parse_schedule("0,0,1,0")
    assert forever.window(999) == Window(1000, 1000, 0)
    assert parse_schedule("1,0,2") == Schedule(1, 0, 2, 1)
    for bad in ("1,1", "1,1,0,1", "x,1,1,1", "-1,0,1,1"):
        with pytest.raises(ValueError):
            parse_schedule(bad)


def test_plan_config_round_trip():
    for plan in (WindowPlan(windows=parse_steps("3-5,9")), WindowPlan(schedule=Schedule(1, 1, 2, 0))):
        again = WindowPlan.from_config(plan.to_config())
        assert [again.window(k) for k in range(4)] == [plan.window(k) for k in range(4)]


def test_spool_names_round_trip(tmp_path):
    sess = session.Session(tmp_path, "n", {})
    p = sess.spool_name(12, 3456, 7, session.KINETO_SUFFIX)
    assert session.parse_spool_name(p.name) == (12, 3456, 7)
    assert session.parse_spool_name("owner-r1") is None


def test_one_traced_process_per_rank(tmp_path):
    sess = session.Session(tmp_path, "n", {})
    assert session.claim_rank(sess, 0)
    assert session.claim_rank(sess, 0)  # the holder itself
    other = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from pathlib import Path; from profui.capture import session; "
            f"s = session.Session(Path({str(tmp_path)!r}), 'n', {{}}); "
            "sys.exit(0 if session.claim_rank(s, 0) else 1 if session.claim_rank(s, 1) else 2)",
        ]
    )
    assert other.returncode == 1  # rank 0 is held by this live process; rank 1 was free
    # a claim left by a process that has exited is taken over
    (tmp_path / "owner-r1").unlink()
    os.symlink(str(_dead_pid()), tmp_path / "owner-r1")  # a claim holds its pid as a link's target
    assert session.claim_rank(sess, 1)
    assert os.readlink(tmp_path / "owner-r1") == str(os.getpid())


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def test_rank_from_launcher_variables(monkeypatch):
    for var in ("RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"):
        monkeypatch.delenv(var, raising=False)
    assert session.rank() == 0
    monkeypatch.setenv("SLURM_PROCID", "5")
    assert session.rank() == 5
    monkeypatch.setenv("RANK", "2")
    assert session.rank() == 2
