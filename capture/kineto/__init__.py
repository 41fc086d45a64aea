"""PyTorch Profiler (Kineto) Chrome-trace JSON: read, converted into the trace format, written.

:func:`~.file_import.convert_kineto_file` converts one file into an existing trace (profcap's
daemon, and the import pipeline of :mod:`profui.capture.ingest` for each Kineto source); the
text is read by :mod:`.reader` (with :mod:`.inflater`, :mod:`.spill`), scanned by the C
tokenizer ``_scan`` (:mod:`.native`) and turned into rows by :mod:`.convert` by the rules of
:mod:`.mapping` and :mod:`.timeparse`; :mod:`.sniff` tells a Kineto file from other JSON, and
:mod:`.export` writes rows back as Chrome-trace JSON.

Nothing is loaded with the package (it imports none of its modules): each module is imported
where it is used.
"""
