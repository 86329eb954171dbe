"""attnreport is installable by name: ``python -m build`` of a clean copy of the sources
makes an sdist and a wheel that ``twine check`` passes, with complete metadata (URLs,
classifiers, the licence, every extra) and the version set in one place; the release
workflow builds and publishes them on a version tag, and refuses a tag that is not that
version."""

from __future__ import annotations

import email
import re
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from pathlib import Path

import pytest
import yaml

import attnreport
from tests.patience import patience
from tests.test_wheel import SHIPPED, copy_sources

ROOT = Path(__file__).resolve().parent.parent
RELEASE = ROOT / ".github" / "workflows" / "release.yml"
VERSION = attnreport.__version__

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> Path:
    """The sdist and the wheel ``python -m build`` makes of a clean copy of the sources
    (the wheel built from the sdist, as ``build`` does; no isolation: offline)."""
    root = tmp_path_factory.mktemp("release")
    source = copy_sources(root / "src")
    command = [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(root / "dist")]
    done = subprocess.run(
        [*command, str(source)],
        capture_output=True,
        text=True,
        timeout=patience(600),
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return root / "dist"


def test_the_sdist_and_the_wheel_pass_twine_check(dist):
    files = sorted(p.name for p in dist.iterdir())
    assert files == [f"attnreport-{VERSION}-py3-none-any.whl", f"attnreport-{VERSION}.tar.gz"]
    done = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", *map(str, sorted(dist.iterdir()))],
        capture_output=True,
        text=True,
        timeout=patience(300),
    )
    assert done.returncode == 0 and done.stdout.count("PASSED") == 2, done.stdout + done.stderr


def test_the_metadata_is_complete(dist):
    wheel = zipfile.ZipFile(dist / f"attnreport-{VERSION}-py3-none-any.whl")
    meta = email.message_from_bytes(wheel.read(f"attnreport-{VERSION}.dist-info/METADATA"))
    assert meta["Name"] == "attnreport" and meta["Version"] == VERSION
    assert meta["License-Expression"] == "MIT" and meta["License-File"] == "LICENSE"
    assert f"attnreport-{VERSION}.dist-info/licenses/LICENSE" in wheel.namelist()
    urls = dict(url.split(", ", 1) for url in meta.get_all("Project-URL"))
    assert set(urls) >= {"Homepage", "Source", "Issues", "Documentation"}
    assert all(url.startswith("https://github.com/attnreport/attnreport") for url in urls.values())
    classifiers = meta.get_all("Classifier")
    assert "Programming Language :: Python :: 3.11" in classifiers
    assert any(c.startswith("Topic :: Scientific/Engineering") for c in classifiers)
    assert not any(c.startswith("License ::") for c in classifiers)  # the SPDX expression says it
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert set(meta.get_all("Provides-Extra")) == set(declared["optional-dependencies"])
    assert meta.get_payload().startswith("# attnreport")  # the README, shown on PyPI
    assert meta["Description-Content-Type"] == "text/markdown"
    assert meta["Requires-Python"] == ">=3.11"


def test_the_version_is_set_in_one_place():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in project["project"] and project["project"]["dynamic"] == ["version"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "attnreport.__version__"}
    assert re.fullmatch(r"\d+\.\d+\.\d+", VERSION)


def test_the_sdist_builds_the_same_package(dist):
    with tarfile.open(dist / f"attnreport-{VERSION}.tar.gz") as sdist:
        names = sdist.getnames()
    top = f"attnreport-{VERSION}/"
    for name in ("LICENSE", "README.md", "pyproject.toml", "setup.py", "templates/base.html"):
        assert top + name in names, name
    assert not [n for n in names if "/tests/" in n or "/build/" in n]
    wheel = set(zipfile.ZipFile(dist / f"attnreport-{VERSION}-py3-none-any.whl").namelist())
    assert not [name for name in SHIPPED if name not in wheel]


def _release_steps() -> dict[str, list[dict]]:
    jobs = yaml.safe_load(RELEASE.read_text(encoding="utf-8"))["jobs"]
    return {name: job["steps"] for name, job in jobs.items()}


def test_the_release_workflow_publishes_on_a_version_tag_with_trusted_publishing():
    workflow = yaml.safe_load(RELEASE.read_text(encoding="utf-8"))
    assert workflow[True]["push"]["tags"] == ["v*"]  # YAML reads the key `on` as True
    publish = workflow["jobs"]["publish"]
    assert publish["needs"] == "build" and publish["permissions"] == {"id-token": "write"}
    assert publish["environment"]["name"] == "pypi"
    uses = [step.get("uses", "") for step in publish["steps"]]
    assert uses[-1] == "pypa/gh-action-pypi-publish@release/v1"  # the action's own advice
    assert not any("password" in step.get("with", {}) for step in publish["steps"])  # no token
    build = "\n".join(step.get("run", "") for step in _release_steps()["build"])
    assert "python -m build" in build and "twine check --strict dist/*" in build


@pytest.mark.parametrize(("tag", "passes"), [(f"v{VERSION}", True), ("v9.9.9", False)])
def test_a_tag_that_is_not_the_version_stops_the_release(tmp_path, dist, tag, passes):
    step = next(s["run"] for s in _release_steps()["build"] if "GITHUB_REF_NAME" in s.get("run", ""))  # fmt: skip
    (tmp_path / "dist").mkdir()
    for built in dist.iterdir():
        (tmp_path / "dist" / built.name).write_bytes(b"")
    done = subprocess.run(
        ["bash", "-e", "-c", step],
        cwd=tmp_path,
        env={"GITHUB_REF_NAME": tag, "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
    )
    assert (done.returncode == 0) == passes, done.stdout + done.stderr
    if not passes:
        assert f"::error::tag {tag} is not the version in attnreport/__init__.py" in done.stdout
