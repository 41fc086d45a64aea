"""``python -m profui.capture.daemon CONFIG_JSON``: run the sampling daemon (started by profcap)."""

from .main import main

main()
