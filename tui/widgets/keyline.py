"""The keys line at the bottom of every screen: the keys that work here, on one line.

Textual's ``Footer`` shows the same keys, but it rebuilds a widget per key whenever the focus
moves (every ``]`` on the dashboard, every view switch), and that restyling was a third of a
warm ``profui open``. This line is one widget whose text is redrawn instead.
"""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static


class KeyLine(Static):
    """The shown bindings of the screen's focused chain: ``key description`` pairs."""

    DEFAULT_CSS = """
    KeyLine { dock: bottom; height: 1; padding: 0 1; background: $panel; }
    """

    def __init__(self) -> None:
        super().__init__("", id="keys")

    def on_mount(self) -> None:
        self.screen.bindings_updated_signal.subscribe(self, self._bindings_changed)
        self.update(self.keys_text())

    def on_unmount(self) -> None:
        self.screen.bindings_updated_signal.unsubscribe(self)

    def _bindings_changed(self, _screen) -> None:
        self.update(self.keys_text())

    def keys_text(self) -> Text:
        """One line: each shown action once (its first key), enabled ones in bold."""
        t = Text(no_wrap=True, overflow="ellipsis")
        seen: set[str] = set()
        for _node, binding, enabled, _tooltip in self.screen.active_bindings.values():
            if not binding.show or binding.action in seen:
                continue
            seen.add(binding.action)
            if t:
                t.append("  ")
            t.append(self.app.get_key_display(binding), style="bold reverse" if enabled else "dim")
            t.append(f" {binding.description}", style="" if enabled else "dim")
        return t
