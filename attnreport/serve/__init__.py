"""``attnreport serve``: preview a site, and with ``--watch`` rebuild it on every save.

``server`` serves the site folder (and, live, an event stream that reloads open pages),
``watcher`` notices saves by polling, ``project`` holds the settings and the loaded
model and builds, ``analysis`` brings the results folder up to date analysing only what
changed, and ``loop`` ties them together (``watch_site``).
"""
