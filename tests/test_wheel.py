"""The wheel ships what the package reads at run time, and works installed on its own.

The wheel is built from a copy of the sources (no stale ``build/`` can leak into it),
without build isolation so the test runs offline. It is then installed with ``--no-deps``
into a fresh venv that sees this environment's packages (torch, jinja2, ...), and pages
are rendered there through the package's one template loader.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import textwrap
import zipfile
from pathlib import Path

import pytest

from attnreport.output import write_site
from attnreport.results import CURRENT, dump
from tests.fixtures.fake_results import fake_study, typed
from tests.patience import patience

ROOT = Path(__file__).resolve().parent.parent
SOURCES = (
    "pyproject.toml",
    "setup.py",
    "README.md",
    "LICENSE",
    "attnreport",
    "templates",
    "benchmarks",
)
SHIPPED = (
    "attnreport/templates/base.html",
    "attnreport/templates/index.html",
    "attnreport/templates/sentence.html",
    "attnreport/templates/404.html",
    "attnreport/templates/partials/figure.html",
    "attnreport/templates/assets/style.css",
    "attnreport/charts/runtime.js",
    "attnreport/charts/runtime_state.js",
    "attnreport/charts/runtime_layout.js",
    "attnreport/charts/runtime_fit.js",
    "attnreport/charts/runtime_data.js",
    "attnreport/charts/runtime_label.js",
    "attnreport/serve/live.js",
    "attnreport/data/sentences.txt",
)


def copy_sources(dest: Path) -> Path:
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "build")
    dest.mkdir()
    for name in SOURCES:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, dest / name, ignore=ignore)
        else:
            shutil.copy2(source, dest / name)
    return dest


def pip(*args: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pip", "--disable-pip-version-check", *args],
        capture_output=True,
        text=True,
        timeout=patience(600),
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]


def fresh_venv(path: Path) -> Path:
    """A venv without pip that also sees this environment's packages, its Python."""
    subprocess.run(
        [sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(path)],
        check=True,
        timeout=patience(120),
    )
    python = path / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    # This environment may itself be a venv: --system-site-packages alone would not see it.
    ours = sysconfig.get_paths()["purelib"]
    (Path(site) / "zz_parent_env.pth").write_text(f"import site; site.addsitedir({ours!r})\n")
    return python


RENDER = textwrap.dedent(
    """
    import attnreport
    from attnreport.site.render import environment, render_404, template_asset
    print(attnreport.__file__)
    print(environment().loader.searchpath[0])
    html = render_404()
    assert html.lower().startswith("<!doctype html>") and "Page not found" in html, html[:200]
    assert template_asset("style.css").decode() in html
    print(len(html))
    import sys
    from attnreport.cli import main
    main(["render", sys.argv[1], "--out", "site", "--no-images"])
    """
)


def render_in(python: Path, cwd: Path) -> list[str]:
    """Run RENDER with ``python`` outside the repository (a 404 page through the template
    loader, then ``attnreport render`` of a small results folder into ``cwd/site``): its
    stdout lines."""
    results = write_site(dump(typed(fake_study(2, n_layers=2, n_heads=2))), cwd / "results")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(
        [str(python), "-c", RENDER, str(results)],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=patience(300),
    )
    assert done.returncode == 0, done.stderr[-3000:]
    for name in ("index.html", "assets/style.css", "assets/runtime.js", "results/" + CURRENT.set):
        assert (cwd / "site" / name).is_file(), f"the installed wheel rendered no {name}"
    return done.stdout.splitlines()[:3]


@pytest.mark.slow
def test_wheel_ships_templates_assets_and_runtime_and_renders_installed(tmp_path):
    source = copy_sources(tmp_path / "src")
    pip(
        "wheel",
        "--no-deps",
        "--no-build-isolation",
        "-q",
        "-w",
        str(tmp_path / "dist"),
        str(source),
    )
    wheel = next((tmp_path / "dist").glob("attnreport-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    missing = [name for name in SHIPPED if name not in names]
    assert not missing, f"not in the wheel: {missing}"
    assert not [n for n in names if n.startswith(("benchmarks/", "tests/", "templates/"))]
    assert not [n for n in names if n.endswith((".pyc", ".egg-info"))]

    python = fresh_venv(tmp_path / "venv")
    pip("--python", str(python), "install", "--no-deps", "-q", str(wheel))
    package, templates, size = render_in(python, tmp_path)
    venv = str(tmp_path / "venv")
    assert package.startswith(venv), f"attnreport imported from {package}, not the wheel"
    assert templates.startswith(venv) and templates.endswith("attnreport/templates")
    assert int(size) > 1000


@pytest.mark.slow
def test_editable_install_reads_the_top_level_templates(tmp_path):
    source = copy_sources(tmp_path / "src")
    python = fresh_venv(tmp_path / "venv")
    pip(
        "--python",
        str(python),
        "install",
        "--no-deps",
        "--no-build-isolation",
        "-q",
        "-e",
        str(source),
    )
    package, templates, _ = render_in(python, tmp_path)
    assert package == str(source / "attnreport" / "__init__.py")
    assert templates == str(source / "templates")
