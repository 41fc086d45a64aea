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

    def on_resize(self) -> None:
        self.update(self.keys_text())

    def keys_text(self) -> Text:
        """One line: each shown action once (its first key), enabled ones in bold. Where they do
        not all fit, the first ones that do, then ``…`` and the key that lists every key (``?``),
        which is never cut off."""
        items: list[tuple[str, str, bool]] = []
        last: tuple[str, str, bool] | None = None
        seen: set[str] = set()
        for _node, binding, enabled, _tooltip in self.screen.active_bindings.values():
            if not binding.show or binding.action in seen:
                continue
            seen.add(binding.action)
            item = (self.app.get_key_display(binding), binding.description, enabled)
            if binding.action == "help":
                last = item
            else:
                items.append(item)
        room = self.size.width or 10**6  # the content area: the padding is not in it
        shown = [*items, *([last] if last else [])]
        if last is not None and _width(shown) > room:
            kept: list[tuple[str, str, bool]] = []
            for item in items:
                if _width([*kept, item, ("…", "", True), last]) > room:
                    break
                kept.append(item)
            shown = [*kept, ("…", "", True), last]
        t = Text(no_wrap=True, overflow="ellipsis")
        for key, description, enabled in shown:
            if t:
                t.append("  ")
            if key == "…":
                t.append(key, style="dim")
                continue
            t.append(key, style="bold reverse" if enabled else "dim")
            t.append(f" {description}", style="" if enabled else "dim")
        return t


def _width(items: list[tuple[str, str, bool]]) -> int:
    """Cells the items take on the line, two spaces between them."""
    from rich.cells import cell_len

    return sum(cell_len(k) + (1 + cell_len(d) if d else 0) for k, d, _ in items) + 2 * max(len(items) - 1, 0)
