"""``?``: every key of the screen underneath, read from its live bindings."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import Static


def app_keys(app: App) -> list[tuple[str, str]]:
    """``(keys, description)`` of every key the app's current screen answers: the app's own
    only (Textual's defaults, ctrl+q and the copy keys, are not ours to list); one action bound
    to several keys is one line; the view's own keys first, plain scrolling last."""
    defaults = {
        (b.key, b.action, b.description) for cls in (App, Screen) for b in Binding.make_bindings(cls.BINDINGS)
    }
    # the screen's default Tab (focus next) shadows an app's Tab of the same action, named
    # for that app ("Next table"): the app's name is the one to list
    own = {b.key: b for b in Binding.make_bindings(type(app).BINDINGS)}
    by_action: dict[tuple[str, str], list[str]] = {}
    for key, active in app.active_bindings.items():
        b = active.binding
        if key in own and b.action.removeprefix("app.") == own[key].action:
            b = own[key]
        if not b.description or (key, b.action, b.description) in defaults:
            continue
        shown = b.key_display or app.get_key_display(b)
        names = by_action.setdefault((b.action, b.description), [])
        if shown not in names:
            names.append(shown)
    keys = [(", ".join(names), desc) for (_, desc), names in by_action.items()]
    keys.sort(key=lambda kd: kd[1].startswith(("Scroll", "Page")))
    return keys


def toggle_help(app: App, footer: str = "") -> None:
    """``?``: show the keys of the screen underneath (and ``footer``, a line of what holds
    everywhere), or close them when shown."""
    if isinstance(app.screen, HelpScreen):
        app.pop_screen()
        return
    app.push_screen(HelpScreen(app_keys(app), footer))


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

    def __init__(self, keys: list[tuple[str, str]], footer: str = "") -> None:
        super().__init__()
        self.keys = keys
        self.footer = footer

    def compose(self) -> ComposeResult:
        width = max((len(k) for k, _ in self.keys), default=4) + 2
        lines = ["[b]Keys[/b]  (Esc closes)", ""]
        lines += [f"[b]{k.ljust(width).replace('[', chr(92) + '[')}[/b]{d}" for k, d in self.keys]
        if self.footer:
            lines += ["", self.footer]
        with VerticalScroll():
            yield Static("\n".join(lines), id="help-text")

    def action_dismiss_help(self) -> None:
        """Close the help."""
        self.dismiss(None)
