"""The names every stage shares, and the settings' defaults: one home for each.

This module is the bottom floor: it imports nothing from attnreport, so any module may
import it (an import-linter contract in ``pyproject.toml`` holds it there). A name
used by two stages (a table's statistics, a page's parts, the site folder's marker)
is defined here once; a stage that needs a variant (a capitalised label, a heading)
derives it from these.
"""

from __future__ import annotations

# The focus statistics of a head, in the order tables and figures list them.
FOCUS_STATISTICS: tuple[str, ...] = ("self_focus", "first_focus", "concentration")
# Their names in running text (lower case; a figure title capitalises them).
FOCUS_NAMES: dict[str, str] = {
    "self_focus": "self focus",
    "first_focus": "first-token focus",
    "concentration": "concentration",
}

# The terms of the pre-softmax score breakdown, position first (models without a
# position term draw the rest).
TERMS: tuple[str, ...] = ("position", "bias", "content", "query_only")

# The tensors an intervention may change, as the grids label them.
TARGETS: tuple[str, ...] = ("Q", "K", "V")

# (anchor, heading): the parts of a sentence page, in page order; a figure's registry
# entry names its part by anchor (the index page has one part of its own, "set").
PARTS: tuple[tuple[str, str], ...] = (
    ("focus", "1. What attention focuses on"),
    ("layers", "2. How focus changes across layers"),
    ("impact", "3. What attention changes"),
    ("interventions", "4. Interventions"),
)
PART_ANCHORS: tuple[str, ...] = tuple(anchor for anchor, _ in PARTS)

MOST = 0.5  # "most queries" / "most heads": strictly more than half

# A folder holding this file was written by attnreport (a site or a results folder), so
# a new run may replace it whole.
MARKER = ".attnreport-site"
RESULTS_FOLDER = "results/"  # a site's copy of the results it was drawn from
OPTIONS_NAME = "render.json"  # inside a site's results/: the options it was drawn with
OPTIONS_FILE = RESULTS_FOLDER + OPTIONS_NAME  # the same, relative to the site

# The manifest's ``model.source`` of a model object analysed in Python (the API's
# ``attnreport.analyze``), beside ``gguf``, ``directory`` and ``hub`` (``models.loading``).
PYTHON_SOURCE = "python"

# The accepted values of the settings that are a choice.
DTYPES: tuple[str, ...] = ("float32", "bfloat16", "float16")
DEVICES: tuple[str, ...] = ("cpu", "cuda", "auto")
DEVICE_MAPS: tuple[str, ...] = ("auto", "balanced")  # accelerate's placements
BOS: tuple[str, ...] = ("auto", "always", "never")  # begin-of-sequence token

# Settings' defaults, shared by ``config.Settings`` (what the user sets),
# ``results.StudySettings`` (what the manifest records) and ``site.SiteOptions``
# (what a render is drawn with).
TITLE = "What does attention focus on?"
AUTHORS: tuple[str, ...] = ()  # a report's authors are its people, never the tool
EPSILONS: tuple[float, ...] = (5e-1, 1e-3, 1e-10)
SCALING_INPUTS = 8  # the scaling grid runs on the first 8 sentences (its spread over them)
BREAKDOWN_RANKS = 3
MAP_TOKENS = 256  # n x n attention maps and exact per-query rows are kept up to this many tokens
BOS_DEFAULT = "auto"
PAGES = "all"  # which sentences get a page
IMAGES = True  # a static SVG of every figure
PNG = False  # a static PNG too
PNG_SCALE = 2.0  # PNG pixels per figure pixel
RTOL, ATOL = 1e-3, 1e-4  # attnreport compare: relative and absolute tolerances
