"""attnreport's benchmarks: ``python -m benchmarks`` from the repository root writes BENCHMARKS.md.

Not part of the package (nothing here ships in the wheel); the modules import
``attnreport`` like any user would. ``run`` is the entry point, ``sections`` and
``pages`` the measured sections, ``workers`` the tasks that need a fresh process.
"""
