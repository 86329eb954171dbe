"""Shared fixtures, and how the suite runs in parallel.

``make test`` runs pytest-xdist workers (one per CPU and one more, ``--dist loadfile``): each test module
runs on one worker, so its ``scope="module"`` fixtures are made once, and modules start
longest first (``pytest_collection_modifyitems``, by the seconds each took in a measured
run: ``tests/module_seconds.py`` says how to measure them again). Tests that must not run
beside each other go in one module: every test that starts a local Ray cluster (mark ``ray``) is in
``test_corpus_ray.py``, and collection stops if ``ray`` marks spread to another module.
(``--dist loadgroup`` cannot group across modules here: xdist 3.8 renames ``_nodeid``,
which pytest 9 no longer reads.)

Two tiers: ``make test`` (every change, CI) leaves out the tests marked ``extended``, which
``make test-all`` adds; an extended test names the landing tests that run its code path
(``tests/tiers.py`` says which tests belong there, and collection checks the names).

Reusing expensive work, for a new test:

- Tiny saved models: ask for ``tiny_model_dirs`` (family -> folder) or ``tiny_model_dir``
  (parametrised over every family). They are saved once per run for all workers. Read
  them; a test that must change one copies it first (``shutil.copytree``).
- The committed example rendered by this checkout: ``example_render``, and the cache
  of figures and images that render filled, for a test that renders the example again:
  ``example_cache``; a 512-token page of fake results: ``long_page`` (all read-only).
- Anything else expensive that several modules need (a built site, an analysis of the
  default model): in a session fixture, ``build_once(shared_dir, name, make)``, where
  ``shared_dir`` is the fixture and ``make(folder)`` fills ``folder``. The first worker
  to ask builds it under a file lock; the others wait and get the same folder. Treat it
  as read-only: copy it (``shutil.copytree(built, tmp_path / "x")``) before changing it.
- Servers bind port 0 (or a port a probe socket was just given), never a fixed one.
- Waits: poll for the condition (a browser test waits for the page's own signal,
  ``tests/browser.py``), bounded by ``patience(s)`` (``tests/patience.py``), never a fixed
  sleep; a subprocess's timeout is ``patience(s)`` too. A speed a user was promised is
  bounded in CPU time (``test_serve_stop``, ``test_checks``), not wall-clock time.
- The working folder: every test starts in an empty folder of its own (``own_cwd``), so
  the example's ``attnreport.toml`` at the checkout's root is never the project of a
  command a test runs; a test that means the checkout chdirs to it (``monkeypatch.chdir``).
- Torch runs one thread per worker (``pytest_configure``): workers are the parallelism,
  and torch threads spinning beside them on 2 busy cores made a tiny-model test take
  150 s instead of 5.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from filelock import FileLock
from hypothesis import settings as hypothesis_settings

from tests import module_seconds, tiers
from tests.tiny_models import FAMILY_NAMES, save_tiny_model

pytest_plugins = ["tests.browser"]  # the browser and offline_page fixtures

# No property test has a deadline: Hypothesis' default (200 ms an example) failed a codec
# test that took 308 ms beside the rest of the suite. What a test checks is its result,
# never how fast a busy machine gets it (issue 43). And the examples are the same on every
# run (derandomize): a CI run drew the one set of 41 heads that a test's property had
# wrong, on one run of many. To search further: pytest --hypothesis-profile=default.
hypothesis_settings.register_profile("attnreport", deadline=None, derandomize=True)
hypothesis_settings.load_profile("attnreport")


def pytest_configure(config):
    """vl-convert measures text with its own fonts in this process, whichever test uses it
    first (it builds its font database once; see ``attnreport.charts.export.fonts``); and the
    tests get a cache folder of their own (``own_cache``). Under xdist, torch and the
    processes tests start use one thread each (``one_thread_per_worker``)."""
    from attnreport.charts.export.fonts import use_bundled_fonts

    use_bundled_fonts()
    config.attnreport_cache = own_cache()
    if parallel(config):
        one_thread_per_worker()


def parallel(config) -> bool:
    """True in an xdist worker, and in a controller that will start workers."""
    workers = getattr(config.option, "numprocesses", None)
    return bool(os.environ.get("PYTEST_XDIST_WORKER")) or bool(workers)


def one_thread_per_worker() -> None:
    """One intra-op thread for torch here and (through the environment, set before the
    workers start) in every worker and every process a test starts."""
    import torch

    os.environ["OMP_NUM_THREADS"] = "1"
    os.environ["MKL_NUM_THREADS"] = "1"
    torch.set_num_threads(1)


# Rough seconds a test with each mark costs (any other test: UNMARKED_COST), for a module
# that tests/module_seconds.json (the seconds each module took in a measured run) lacks.
MARK_COST = {"slow": 20.0, "default_model": 20.0, "ray": 20.0, "browser": 3.0}
UNMARKED_COST = 0.3


@pytest.hookimpl(tryfirst=True)  # before ``-m`` deselects: every extended mark is checked
def pytest_collection_modifyitems(config, items):
    """Under xdist, modules run in order of their estimated cost, longest first (each
    keeps its tests' order); tests marked ``ray`` must all be in one module; an
    ``extended`` test names the landing tests that cover it (``tests/tiers.py``)."""
    wrong = tiers.problems(items, Path(str(config.rootpath)))
    if wrong:
        raise pytest.UsageError("\n".join(wrong))
    ray_modules = {module_of(item) for item in items if item.get_closest_marker("ray")}
    if len(ray_modules) > 1:
        raise pytest.UsageError(
            f"tests marked 'ray' are in {sorted(ray_modules)}: keep them in one module, "
            "so that one xdist worker runs them and one local Ray cluster runs at a time"
        )
    if parallel(config):
        items[:] = longest_modules_first(items)


def module_of(item) -> str:
    return item.nodeid.split("::", 1)[0]


def cost_of(item) -> float:
    marked = [MARK_COST[m.name] for m in item.iter_markers() if m.name in MARK_COST]
    return sum(marked) or UNMARKED_COST


def longest_modules_first(items: list) -> list:
    """``items`` with their modules sorted by measured seconds (``tests/module_seconds.py``),
    else by the total ``cost_of`` their tests, highest first (stable). The marks alone
    started the quick bench, the longest test, 15th, and a 25-second module first."""
    costs: dict[str, float] = {}
    first: dict[str, int] = {}
    for index, item in enumerate(items):
        costs[module_of(item)] = costs.get(module_of(item), 0.0) + cost_of(item)
        first.setdefault(module_of(item), index)
    costs |= {module: s for module, s in module_seconds.measured().items() if module in costs}
    return sorted(items, key=lambda item: (-costs[module_of(item)], first[module_of(item)]))


def pytest_unconfigure(config):
    folder = getattr(config, "attnreport_cache", None)
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)  # the models link is removed, not followed


def own_cache() -> Path:
    """Point ``ATTNREPORT_CACHE`` (inherited by the processes tests start) at a new empty
    folder, so that figures, images and sites the tests make neither come from a user's
    cache nor stay in it: a test that passed only because an earlier run had filled the
    cache would pass nowhere else. Its ``models`` folder links to the user's, since
    dequantising the default model again would add 40 s to every run. One folder per
    process (each xdist worker has its own): tests may empty or fill it."""
    folder = cache_linking_models(Path(tempfile.mkdtemp(prefix="attnreport-tests-cache-")))
    os.environ["ATTNREPORT_CACHE"] = str(folder)
    return folder


def cache_linking_models(folder: Path) -> Path:
    """``folder`` (made if missing) as a cache whose ``models`` links to the models of the
    cache in use (``ATTNREPORT_CACHE``; made if missing, so the link is never dangling),
    so a test's cache never dequantises them again."""
    from attnreport.usercache import cache_dir

    models = cache_dir() / "models"
    models.mkdir(parents=True, exist_ok=True)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "models").symlink_to(models.resolve(), target_is_directory=True)
    return folder


@pytest.fixture(scope="session")
def shared_dir(tmp_path_factory) -> Path:
    """A folder every xdist worker of this run sees (the run's base temp folder; this
    process's own when xdist is off)."""
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # workers' base folders are popen-gwN inside the run's
    folder = base / "shared"
    folder.mkdir(exist_ok=True)
    return folder


def build_once(shared: Path, name: str, make: Callable[[Path], object]) -> Path:
    """``shared / name``, filled by ``make(folder)`` once per run whichever worker asks
    first (the others wait on a file lock). ``make`` writes into a scratch folder that is
    renamed only when it returns, so a failed build leaves nothing half-made behind: the
    next caller tries again (and fails the same way, with its own traceback)."""
    done = shared / name
    with FileLock(str(shared / f"{name}.lock")):
        if not done.is_dir():
            scratch = shared / f"{name}.partial"
            shutil.rmtree(scratch, ignore_errors=True)
            scratch.mkdir()
            make(scratch)
            scratch.rename(done)
    return done


@pytest.fixture(scope="session")
def tiny_model_dirs(shared_dir):
    """family name -> directory holding a tiny random-weight model saved with
    save_pretrained (saved once per run, shared by every worker: read-only)."""

    def save_all(root: Path) -> None:
        for name in FAMILY_NAMES:
            save_tiny_model(name, root / name)

    root = build_once(shared_dir, "tiny-models", save_all)
    return {name: root / name for name in FAMILY_NAMES}


@pytest.fixture(params=FAMILY_NAMES)
def tiny_model_dir(request, tiny_model_dirs):
    return tiny_model_dirs[request.param]


@pytest.fixture(scope="session", autouse=True)
def session_cwd(tmp_path_factory) -> Iterator[None]:
    """Module and session fixtures run in an empty folder too (they start before ``own_cwd``)."""
    before = os.getcwd()
    os.chdir(tmp_path_factory.mktemp("session-cwd"))
    yield
    os.chdir(before)


@pytest.fixture(autouse=True)
def own_cwd(tmp_path_factory, monkeypatch) -> None:
    """Each test runs in an empty folder: no attnreport.toml there unless it writes one."""
    monkeypatch.chdir(tmp_path_factory.mktemp("cwd"))


@pytest.fixture(scope="session")
def example_render(shared_dir) -> Path:
    """The committed example (``site/``) rendered again by this checkout from its committed
    results, once per run for every worker (read-only: copy it before changing it)."""
    from click.testing import CliRunner

    from attnreport.cli import main

    results = Path(__file__).resolve().parent.parent / "site" / "results"

    def render(folder: Path) -> None:
        cache = cache_linking_models(folder / "cache")  # its own, kept for ``example_cache``
        with contextlib.chdir(results.parent.parent), pytest.MonkeyPatch.context() as patch:
            patch.setenv("ATTNREPORT_CACHE", str(cache))
            done = CliRunner().invoke(main, ["render", str(results), "--out", str(folder / "site")])
        assert done.exit_code == 0, done.output

    return build_once(shared_dir, "example-render", render) / "site"


@pytest.fixture
def example_cache(example_render, monkeypatch) -> Path:
    """``ATTNREPORT_CACHE`` pointed, for one test, at the cache ``example_render`` filled:
    a render of the example's results then finds every figure and image made already
    (a different figure is made anew, so what a test compares is still this render's).
    The test may add to it, never remove from it."""
    cache = example_render.parent / "cache"
    monkeypatch.setenv("ATTNREPORT_CACHE", str(cache))
    return cache


@pytest.fixture(scope="session")
def long_page(shared_dir) -> Path:
    """A 512-token sentence page with the default model's 9 heads and the intervention
    grids, built from fake results once per run for every worker (4 layers, not 30: the
    size of a figure depends on the tokens and heads; 30 layers take minutes to fake)."""
    from dataclasses import replace

    from tests.fixtures.fake_results import fake_study
    from tests.test_browser import OPTIONS, build

    def make(folder: Path) -> None:
        study = fake_study(1, n_layers=4, n_heads=9, n_tokens=512)
        build(study, folder / "site", replace(OPTIONS, images=False))

    return next((build_once(shared_dir, "long-page", make) / "site").rglob("s000*.html"))
