"""profui.tui: the Textual app and the ``profui`` command line. Renders; computes nothing
that analysis could own."""
