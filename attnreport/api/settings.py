"""Which settings each call of the Python API takes, checked as a settings file's are.

``config.Settings`` declares every setting once; ``analyze`` takes those that change the
analysis, ``render`` those that only change the site (``site.context.SiteOptions``'s
fields). The others have a home of their own in Python (the model object, the sentence
list, ``Study.save``), and naming one says where it goes, in one line. Values are checked
by ``config.make_settings``, so a bad one reads as it would in ``attnreport.toml``, with
the call named instead of the file (``analyze(): unknown key 'map_token'; did you mean
'map_tokens'?``).
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from attnreport.config import KEYS, Settings, SettingValues, make_settings
from attnreport.errors import AttnReportError
from attnreport.site.context import UNSTORED, SiteOptions

SITE_KEYS = frozenset(f.name for f in fields(SiteOptions) if f.name not in UNSTORED) & set(KEYS)

# The settings that the object passed, or another call, stands for in Python.
ELSEWHERE = {
    "model": "the model is the object you pass to analyze",
    "models": "analyze one model at a time; render([study_a, study_b], out) compares them",
    "sentences": "pass the sentences as analyze's third argument, a list of strings",
    "out": "the results stay in memory: write them with study.save(path)",
    "dtype": "the model object's own dtype is used: convert the model before analyze (model.to(torch.bfloat16))",
    "device": "the model is analysed where it is: move it before analyze (model.to('cuda'))",
    "device_map": "the model is analysed where it is: load it with device_map=... before analyze",
    "rtol": "a tolerance of 'attnreport compare', not a setting of the analysis",
    "atol": "a tolerance of 'attnreport compare', not a setting of the analysis",
}
ANALYSIS_KEYS = frozenset(KEYS) - SITE_KEYS - set(ELSEWHERE)


def _misplaced(values: SettingValues, call: str, allowed: frozenset[str], instead: str) -> None:
    """One line for a known setting that ``call`` does not take, saying where it goes
    (``instead``: what a setting of the other call is)."""
    for key in values:
        if key in KEYS and key not in allowed:
            raise AttnReportError(f"{call}: {key!r}: {ELSEWHERE.get(key, instead)}")


def analysis_settings(values: SettingValues, call: str = "analyze()") -> Settings:
    """The ``Settings`` of an ``analyze`` (or ``verify``) call: ``values`` (the analysis
    settings given, checked) over the defaults; errors name ``call``."""
    _misplaced(values, call, ANALYSIS_KEYS, "a site option: pass it to render()")
    return make_settings(values, call)


def site_values(values: SettingValues) -> dict[str, Any]:
    """The site options a ``render`` call gave, checked and normalised (lists become
    tuples, numbers floats), by name; the options not given are left out."""
    _misplaced(values, "render()", SITE_KEYS, "it changes the analysis: pass it to analyze()")
    checked = make_settings(values, "render()")
    return {key: getattr(checked, key) for key in values}
