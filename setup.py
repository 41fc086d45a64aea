"""Map the three top-level folders onto the ``profui.*`` namespace (see DESIGN.md, Layout).

``capture/`` installs as ``profui.capture``, ``analysis/`` as ``profui.analysis`` and ``tui/`` as
``profui.tui``; their sub-packages follow. ``profui`` itself is an implicit namespace package so
nothing generic lands at the top of site-packages.

One optional C extension, ``profui.capture.kineto._scan``, speeds up Kineto import; where it
cannot be built (no C compiler) the install goes on without it and import runs in pure Python.
"""

import sys

from setuptools import Extension, find_packages, setup

FOLDERS = {"capture": "profui.capture", "analysis": "profui.analysis", "tui": "profui.tui"}

packages: list[str] = []
package_dir: dict[str, str] = {}
for folder, name in FOLDERS.items():
    packages.append(name)
    package_dir[name] = folder
    for sub in find_packages(folder):
        packages.append(f"{name}.{sub}")
        package_dir[f"{name}.{sub}"] = f"{folder}/{sub.replace('.', '/')}"

threads = [] if sys.platform == "win32" else ["-pthread"]  # the scan's parts run at once (POSIX threads)
scan = Extension(
    "profui.capture.kineto._scan",
    sources=["capture/kineto/_scan.c"],
    extra_compile_args=["-O3", *threads],  # -O3: Python's own level; an -O2 here would lower it
    extra_link_args=threads,
    optional=True,
)

setup(packages=packages, package_dir=package_dir, ext_modules=[scan])
