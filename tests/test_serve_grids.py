"""``serve --watch`` shows an edit first and finishes it after (issue 43): the edited
sentence's page and the index are served as soon as the sentence is analysed, with a
note in each intervention grid's place, and the grids follow; a newer save stops grids
that are still running, so grids of the older text are never published over the newer.

The server runs in this process (``watch_site`` in a thread) on a tiny random model. The
grids are held at a gate, not timed: the progress display the loop is given waits on
their first forward pass until the test lets one run through (``GatedDisplay``), so the
test sees the site while they are provably still running. Every wait polls for what it
needs, bounded by ``patience``.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from attnreport.cli import main
from attnreport.results import load
from attnreport.results.compare import Tolerance, compare_results
from attnreport.serve.loop import watch_site
from attnreport.serve.project import Project
from tests.patience import patience
from tests.tiny_models import save_tiny_model

pytestmark = pytest.mark.slow

FIRST = ("the cat sat on the mat .", "the dog chased the cat")
EDITED = "the mat sat on the cat ."  # sentence 0: the page the grids are on, and a grid input
NEWER = "the dog sat on the mat ."  # saved while the grids of EDITED run
NOTE = 'data-updating="scaling-grid"'
CHART = 'id="ar-chart-scaling-grid"'
WAIT_S = patience(120)


class GatedDisplay:
    """A progress display for ``watch_site`` whose intervention grids wait at their first
    forward pass for the test to ``let_one_run`` (a permit each); ``held`` counts the
    grids runs that reached the gate."""

    def __init__(self) -> None:
        self.permits = threading.Semaphore(0)
        self.held = 0
        self.lock = threading.Lock()

    def __call__(self) -> contextlib.AbstractContextManager:
        return contextlib.nullcontext(self.progress)

    def progress(self, stage: str, done: int, _total: int) -> None:
        if stage == "interventions:passes" and done == 1:
            with self.lock:
                self.held += 1
            assert self.permits.acquire(timeout=WAIT_S), "the test never let the grids run"

    def let_one_run(self) -> None:
        self.permits.release()


def wait_for(check: Callable[[], bool], what: str, lines: list[str]) -> None:
    deadline = time.monotonic() + WAIT_S
    while not check():
        assert time.monotonic() < deadline, f"{what} did not happen; the server said {lines[-5:]}"
        time.sleep(0.05)


def get(port: int, name: str) -> str:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=patience(10))
    try:
        conn.request("GET", "/" + name)
        answer = conn.getresponse()
        return answer.read().decode() if answer.status == 200 else ""
    except OSError:
        return ""
    finally:
        conn.close()


def served_build(page: str) -> str:
    """The build a served page was served in (the live script's ``data-build``)."""
    found = re.search(r'data-build="([^"]+)"', page)
    return found.group(1) if found else ""


class Session:
    """A ``watch_site`` running in a thread, and what it said."""

    def __init__(self, project: Project, display: GatedDisplay) -> None:
        self.lines: list[str] = []
        self.urls: list[str] = []
        self.stopped = threading.Event()
        args = (project, "127.0.0.1", 0, self.lines.append, display, self.urls.append)
        self.thread = threading.Thread(
            target=watch_site, args=args, kwargs={"stop_when": self.stopped.is_set}, daemon=True
        )
        self.thread.start()
        wait_for(lambda: bool(self.urls), "listening", self.lines)
        self.port = int(self.urls[0].rsplit(":", 1)[1].strip("/"))

    def page(self, name: str) -> str:
        return get(self.port, name)

    def wait_page(self, name: str, holds: Callable[[str], bool], what: str) -> str:
        seen = [""]

        def check() -> bool:
            seen[0] = self.page(name)
            return holds(seen[0])

        wait_for(check, what, self.lines)
        return seen[0]


@pytest.fixture
def project(tmp_path, monkeypatch) -> Project:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1767225600")  # analysed on 2026-01-01, as dated
    model = save_tiny_model("llama", tmp_path / "model")
    (tmp_path / "sentences.txt").write_text("\n".join(FIRST) + "\n", encoding="utf-8")
    config = tmp_path / "attnreport.toml"
    config.write_text(
        f'model = "{model}"\nsentences = "sentences.txt"\nout = "{tmp_path / "site"}"\n'
        'date = "2026-01-01"\nimages = false\n',
        encoding="utf-8",
    )
    return Project(config, {})


@pytest.fixture
def session(project) -> Iterator[tuple[Session, GatedDisplay]]:
    display = GatedDisplay()
    running = Session(project, display)
    try:
        yield running, display
    finally:
        running.stopped.set()
        for _ in range(8):  # no grids run left waiting at the gate
            display.let_one_run()
        running.thread.join(timeout=WAIT_S)


def write_sentences(project: Project, *texts: str) -> None:
    Path(project.settings.sentences).write_text("\n".join(texts) + "\n", encoding="utf-8")


def grids_listed(site: Path) -> bool:
    manifest = json.loads((site / "results" / "manifest.json").read_text())
    return "interventions.json.gz" in manifest["files"]


def test_an_edit_is_served_before_its_grids_which_follow(project, session):
    server, display = session
    lines = server.lines
    # The first build is served with its grids still to run, then with them.
    first = server.wait_page(
        "s000-the-cat-sat-on-the-mat.html", lambda p: NOTE in p, "the first site"
    )
    wait_for(lambda: display.held == 1, "the first grids", lines)
    assert CHART not in first and "Being updated" in first
    display.let_one_run()
    server.wait_page("s000-the-cat-sat-on-the-mat.html", lambda p: CHART in p, "the first grids")

    # An edit of the grids' sentence: its page and the index are served while its grids
    # are held, each grid figure a note; the pages were told (a new build) both times.
    before = served_build(server.page("index.html"))
    write_sentences(project, EDITED, FIRST[1])
    page = "s000-the-mat-sat-on-the-cat.html"
    shown = server.wait_page(page, lambda p: EDITED in p, "the edited page")
    wait_for(lambda: display.held == 2, "the edit's grids", lines)
    shown = server.page(page)  # still held: the grids have not run
    assert shown.count("data-updating=") == 3 and CHART not in shown
    assert '<p class="ar-updating-note" role="status">Being updated' in shown
    index = server.page("index.html")
    assert EDITED in index and "grids are being computed" in index
    assert served_build(index) != before
    assert not grids_listed(project.site)
    assert any("the intervention grids follow" in line for line in lines), lines[-3:]

    # A newer save while they are held: they stop at their next pass, unpublished, and
    # the newer text's grids run instead.
    write_sentences(project, NEWER, FIRST[1])
    display.let_one_run()
    newest = "s000-the-dog-sat-on-the-mat.html"
    noted = server.wait_page(newest, lambda p: NEWER in p, "the newer page")
    wait_for(lambda: display.held == 3, "the newer save's grids", lines)
    assert any("stopped for a newer save" in line for line in lines), lines[-5:]
    assert NOTE in server.page(newest) and not grids_listed(project.site)
    held = served_build(noted)

    display.let_one_run()
    final = server.wait_page(
        newest, lambda p: CHART in p and served_build(p) != held, "the newer grids"
    )
    assert "data-updating=" not in final and "grids are being computed" not in server.page(
        "index.html"
    )
    wait_for(lambda: any("intervention grids: " in line and "forward passes" in line
                         for line in lines), "the grids' line", lines)  # fmt: skip
    assert display.held == 3  # the stopped grids were not run to the end meanwhile

    # The grids drawn are those of the newer text, as a fresh analysis has them, and the
    # site is what ``render`` draws from its results, notes and all gone.
    shipped = project.site / "results" / "interventions.json.gz"
    assert shipped.read_bytes() == (project.results / "interventions.json.gz").read_bytes()
    fresh = project.results.parent / "fresh"
    args = ["analyze", "--config", str(project.config), "--out", str(fresh)]
    assert CliRunner().invoke(main, args).exit_code == 0
    compared = compare_results(load(fresh), load(project.results), Tolerance(1e-4, 1e-6))
    assert compared.ok, compared.problems[:5]
    copy = project.results.parent / "copy"
    done = CliRunner().invoke(main, ["render", str(project.site / "results"), "--out", str(copy)])
    assert done.exit_code == 0, done.output
    assert tree(project.site) == tree(copy)


def tree(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()
    }
