"""How a trace's status is drawn, wherever it is shown (the jobs list, a trace's title line)."""

from __future__ import annotations

#: Rich style per manifest status (``interrupted``: a capture killed with all its processes).
STATUS_STYLE = {
    "running": "bold green",
    "completed": "",
    "imported": "",
    "failed": "bold red",
    "stopped": "yellow",
    "interrupted": "bold yellow",
    "unreadable": "red",
}
