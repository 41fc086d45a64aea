"""Whether the process that was writing something is still there (a capture, an import, a
spool's recorder, a lock's holder): the one pid check of the package."""

from __future__ import annotations

import os


def pid_alive(pid: int) -> bool:
    """True unless no process ``pid`` exists on this machine (a process of another user is
    alive: signalling it is refused, not unknown)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, ValueError, OSError):
        return True
    return True


def this_host() -> str:
    """This machine's host name, as a capture records it."""
    import socket  # here: the capture's session (inside the training job) asks only pid_alive

    return socket.gethostname()


def capture_gone(capture: dict) -> bool:
    """True when ``capture`` (a manifest's ``capture`` section) names its profcap process on
    this machine and that process is gone. Unknown (no pid, another host) is not gone."""
    pid, host = capture.get("pid"), capture.get("host")
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0 or host != this_host():
        return False
    return not pid_alive(pid)
