"""``profui mcp``: profui's answers as Model Context Protocol tools over stdio.

:mod:`.tools` holds the tools as plain functions returning JSON-ready dicts (no ``mcp`` import,
testable alone); :mod:`.server` registers them on the official SDK's server (the optional
``mcp`` extra, imported only when the server starts).
"""
