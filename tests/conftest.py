"""Shared fixtures: tiny saved models of every family (built once per session)."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from tests.tiny_models import FAMILY_NAMES, save_tiny_model

pytest_plugins = ["tests.browser"]  # the browser and offline_page fixtures


def pytest_configure(config):
    """vl-convert measures text with its own fonts in this process, whichever test uses it
    first (it builds its font database once; see ``attnreport.charts.fonts``); and the
    tests get a cache folder of their own (``own_cache``)."""
    from attnreport.charts.fonts import use_bundled_fonts

    use_bundled_fonts()
    config.attnreport_cache = own_cache()


def pytest_unconfigure(config):
    folder = getattr(config, "attnreport_cache", None)
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)  # the models link is removed, not followed


def own_cache() -> Path:
    """Point ``ATTNREPORT_CACHE`` (inherited by the processes tests start) at a new empty
    folder, so that figures, images and sites the tests make neither come from a user's
    cache nor stay in it: a test that passed only because an earlier run had filled the
    cache would pass nowhere else. Its ``models`` folder links to the user's, since
    dequantising the default model again would add 40 s to every run."""
    from attnreport.usercache import cache_dir

    models = cache_dir() / "models"
    models.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix="attnreport-tests-cache-"))
    (folder / "models").symlink_to(models.resolve(), target_is_directory=True)
    os.environ["ATTNREPORT_CACHE"] = str(folder)
    return folder


@pytest.fixture(scope="session")
def tiny_model_dirs(tmp_path_factory):
    """family name -> directory holding a tiny random-weight model saved with save_pretrained."""
    root = tmp_path_factory.mktemp("tiny-models")
    return {name: save_tiny_model(name, root / name) for name in FAMILY_NAMES}


@pytest.fixture(params=FAMILY_NAMES)
def tiny_model_dir(request, tiny_model_dirs):
    return tiny_model_dirs[request.param]
