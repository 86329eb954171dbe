"""Every load path runs the same checked load: discovery, then the self-check.

``attnreport.session.load_verified`` is the one function that loads a model for
analysis; the commands (``open_session``), the Ray workers
(``attnreport.corpus.engines.cluster``) and ``serve`` (``attnreport.serve.project``)
all call it, so no path analyses a model that the self-check has not passed.
"""

from __future__ import annotations

import ast
from pathlib import Path

import attnreport
from attnreport.session import load_verified

PACKAGE = Path(attnreport.__file__).parent
CHECKED = {"attnreport/verification.py"}  # verified_layers: discovery, then the self-check


def _calls(tree: ast.AST, name: str) -> int:
    return sum(
        1
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and getattr(node.func, "id", getattr(node.func, "attr", None)) == name
    )


def test_discovery_runs_only_inside_the_checked_load():
    """No module outside ``verification.verified_layers`` calls ``discover``, nor ``load_model``
    outside ``load_verified``: a path that skipped the self-check would show up here."""
    where = {"discover": set(), "load_model": set()}
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        rel = path.relative_to(PACKAGE.parent).as_posix()
        for name, found in where.items():
            if _calls(tree, name):
                found.add(rel)
    assert where["discover"] == CHECKED
    assert where["load_model"] == {"attnreport/session.py"}


def test_a_model_held_in_python_goes_through_the_same_self_check():
    """The Python API's ``held_session`` and ``load_verified`` both end in ``verified``
    (discovery, then the self-check); ``analyze`` and ``verify`` open only that session."""
    tree = ast.parse((PACKAGE / "session.py").read_text(encoding="utf-8"))
    bodies = {f.name: f for f in ast.walk(tree) if isinstance(f, ast.FunctionDef)}
    for name in ("load_verified", "held_session"):
        assert _calls(bodies[name], "verified") == 1, name
    assert _calls(bodies["verified"], "verified_layers") == 1
    api = ast.parse((PACKAGE / "api" / "analysis.py").read_text(encoding="utf-8"))
    assert _calls(api, "held_session") == 1 and _calls(api, "load_verified") == 0


def test_the_ray_worker_and_serve_use_the_checked_load():
    for rel in ("corpus/engines/cluster.py", "serve/project.py"):
        tree = ast.parse((PACKAGE / rel).read_text(encoding="utf-8"))
        assert _calls(tree, "load_verified") == 1, rel


def test_load_verified_gives_the_checked_layers(tiny_model_dirs):
    loaded, specs = load_verified(str(tiny_model_dirs["llama"]))
    assert [s.layer for s in specs] == list(range(loaded.model.config.num_hidden_layers))
