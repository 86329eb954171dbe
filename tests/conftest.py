"""Shared fixtures: tiny saved models of every family (built once per session)."""

from __future__ import annotations

import pytest

from tests.tiny_models import FAMILY_NAMES, save_tiny_model

pytest_plugins = ["tests.browser"]  # the browser and offline_page fixtures


def pytest_configure(config):
    """vl-convert measures text with its own fonts in this process, whichever test uses it
    first (it builds its font database once; see ``attnreport.charts.fonts``)."""
    from attnreport.charts.fonts import use_bundled_fonts

    use_bundled_fonts()


@pytest.fixture(scope="session")
def tiny_model_dirs(tmp_path_factory):
    """family name -> directory holding a tiny random-weight model saved with save_pretrained."""
    root = tmp_path_factory.mktemp("tiny-models")
    return {name: save_tiny_model(name, root / name) for name in FAMILY_NAMES}


@pytest.fixture(params=FAMILY_NAMES)
def tiny_model_dir(request, tiny_model_dirs):
    return tiny_model_dirs[request.param]
