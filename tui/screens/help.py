"""``?``: every key of the screen underneath, read from its live bindings."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static


class HelpScreen(ModalScreen[None]):
    """A list of keys and what they do; any of ``?``, Esc or ``q`` closes it."""

    BINDINGS = [
        Binding("escape", "dismiss_help", "Close"),
        Binding("question_mark", "dismiss_help", "Close", show=False),
        Binding("q", "dismiss_help", "Close", show=False),
    ]

    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll { width: 60; max-width: 100%; height: auto; max-height: 90%;
        border: round $accent; padding: 0 1; background: $surface; }
    """

    def __init__(self, keys: list[tuple[str, str]]) -> None:
        super().__init__()
        self.keys = keys

    def compose(self) -> ComposeResult:
        width = max((len(k) for k, _ in self.keys), default=4) + 2
        lines = ["[b]Keys[/b]  (Esc closes)", ""]
        lines += [f"[b]{k.ljust(width).replace('[', chr(92) + '[')}[/b]{d}" for k, d in self.keys]
        lines += [
            "",
            # what the arrows, PgUp/PgDn and Enter do is the view's own (in a table they move
            # and open, on the timeline they pan and follow): they are listed above, not here
            "Tab / the number keys switch views",
        ]
        with VerticalScroll():
            yield Static("\n".join(lines), id="help-text")

    def action_dismiss_help(self) -> None:
        """Close the help."""
        self.dismiss(None)
