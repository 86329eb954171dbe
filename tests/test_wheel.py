"""The built wheel alone can render a site from results: templates, runtime and data
ship inside it, and nothing is read from the source tree."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest

from attnreport.results import dump
from attnreport.site.write import write_site
from tests.fixtures.fake_results import fake_study, typed

ROOT = Path(__file__).resolve().parent.parent


CLEAN = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # no source tree


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, check=True, env=CLEAN)


@pytest.mark.slow
def test_installed_wheel_renders_a_site(tmp_path):
    wheels = tmp_path / "wheels"
    run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
        "-w", str(wheels), str(ROOT), cwd=tmp_path)  # fmt: skip
    (wheel,) = wheels.glob("attnreport-*.whl")
    env = tmp_path / "venv"
    venv.create(env, system_site_packages=True, with_pip=False)
    python = env / "bin" / "python"
    site_packages = Path(
        run(str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))",
            cwd=tmp_path).stdout.strip()
    )  # fmt: skip
    run(sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps",
        str(wheel), cwd=tmp_path)  # fmt: skip
    # then the dependencies (altair, jinja2, ...) come from this test's environment, after the
    # venv's own site-packages; an editable attnreport there is not activated (no .pth run)
    (site_packages / "deps.pth").write_text(sysconfig.get_path("purelib") + "\n")
    results = write_site(dump(typed(fake_study(2, n_layers=2, n_heads=2))), tmp_path / "r")
    code = (
        "import attnreport, sys\n"
        "from attnreport.cli import main\n"
        f"assert attnreport.__file__.startswith({str(site_packages)!r}), attnreport.__file__\n"
        f"main(['render', {str(results)!r}, '--out', 'site', '--no-images'])\n"
    )
    out = subprocess.run(
        [str(python), "-c", code], cwd=tmp_path, capture_output=True, text=True, env=CLEAN
    )
    assert out.returncode == 0, out.stdout + out.stderr
    site = tmp_path / "site"
    for name in ("index.html", "assets/style.css", "assets/runtime.js", "results/set.json"):
        assert (site / name).is_file(), name
