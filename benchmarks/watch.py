"""Section 4c of BENCHMARKS.md: ``attnreport serve --watch``, from a save to the screen.

One ``serve --watch`` process on the example's settings (the default model, the six
built-in sentences written to a file, images on; quick mode: two sentences, no images),
with warm caches (the model cache of this machine, and one ``build`` of the same
settings first, which fills the figure and image caches; quick mode skips that build:
section 4b has just built the same two sentences into the same cache). It runs from a copy of the
package and its templates (``PYTHONPATH``), so the template edit never touches the
checkout. Timed, one after another:

- ``attnreport build`` of the same settings, a new process from start to exit (quick
  mode: section 4's build of the same two sentences), and the server's first build, from
  process start until it reports the build, its site up (judged: no slower than
  ``build``, which runs everything before it writes a page), and until its grids are in;
- a one-sentence edit (sentence 4), a template edit, and an edit of sentence 1 (one the
  mean grid runs on; not judged), each from the write of the file until the served HTML
  has changed, until the page open in Chromium has reloaded and shows it (judged: 3 s and
  1.5 s), and until every chart on it has drawn; and, for a save whose intervention
  grids run again (every sentence the scaling grid reads: the first eight), until the
  server has served the site with them (it puts the edited pages up first, then runs the
  grids: ``serve.loop``). Each save waits for the previous one's grids, the page's reload
  with them, and its static images.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.browser import ALL_DRAWN, WATCH_CHARTS, chromium
from benchmarks.report import Section, ratio_target, seconds
from benchmarks.sections import EXAMPLE_CONFIG, REPO, TITLES, Context, build_cache

WAIT_S = 600  # bound on any one wait (a busy machine)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _until(check: Callable[[], bool], what: str, poll: float = 0.02) -> float:
    """Poll ``check`` until it holds; the time it took."""
    start = time.perf_counter()
    while not check():
        if time.perf_counter() - start > WAIT_S:
            raise RuntimeError(f"serve --watch: {what} did not happen within {WAIT_S} s")
        time.sleep(poll)
    return time.perf_counter() - start


def _served(port: int, page: str = "index.html") -> str:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/{page}", timeout=10) as answer:
            return answer.read().decode("utf-8", "replace")
    except OSError:
        return ""


def _project(ctx: Context, work: Path) -> tuple[Path, list[str], dict[str, str]]:
    """The settings file, its sentences and the environment of every process."""
    from attnreport.sentences import read_sentences

    cache = build_cache(ctx)  # section 4's warm cache, when it ran
    checkout = work / "checkout"
    shutil.copytree(REPO / "attnreport", checkout / "attnreport")  # with its __pycache__
    shutil.copytree(REPO / "templates", checkout / "templates")
    shutil.copy(REPO / "pyproject.toml", checkout / "pyproject.toml")
    sentences = read_sentences(ctx.sentences_file)
    (work / "sentences.txt").write_text("\n".join(sentences) + "\n", encoding="utf-8")
    # serve --watch keeps one model loaded: the one measured (the example compares two)
    model = f"model = {json.dumps(ctx.model)}"  # a TOML basic string
    text = re.sub(r"^models = .*$", lambda _: model, EXAMPLE_CONFIG.read_text(encoding="utf-8"), flags=re.M)  # fmt: skip
    # its own sentences: not the example's set, its pages or its mean grid's passages
    text = re.sub(r"^(sentences|pages|mean_sentences) = .*\n", "", text, flags=re.M)
    if ctx.quick:
        text = text.replace("images = true", "images = false")
    config = work / "attnreport.toml"
    config.write_text(text + 'sentences = "sentences.txt"\n', encoding="utf-8")
    env = {**os.environ, "ATTNREPORT_CACHE": str(cache), "PYTHONPATH": str(checkout)}
    return config, sentences, env


def _build(config: Path, out: Path, env: dict[str, str]) -> float:
    start = time.perf_counter()
    cmd = [sys.executable, "-m", "attnreport.cli", "build", "--config", str(config)]
    done = subprocess.run([*cmd, "--out", str(out), "--force"], env=env, capture_output=True, text=True)  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"attnreport build failed: {done.stderr.strip()[-300:]}")
    return time.perf_counter() - start


class Server:
    """A ``serve --watch`` process and the lines it printed."""

    def __init__(self, work: Path, config: Path, env: dict[str, str]) -> None:
        self.port = _free_port()
        cmd = [sys.executable, "-m", "attnreport.cli", "serve", "--watch", "--config", str(config)]
        self.started = time.perf_counter()
        self.process = subprocess.Popen(
            [*cmd, "--port", str(self.port)], cwd=work, env=env, text=True,
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        self.lines: list[str] = []
        threading.Thread(target=lambda: self.lines.extend(self.process.stdout), daemon=True).start()

    def ended(self) -> bool:
        return self.process.poll() is not None

    def said(self, pattern: str, after: int = 0) -> bool:
        return any(re.search(pattern, line) for line in self.lines[after:])

    def stop(self) -> None:
        self.process.send_signal(signal.SIGINT)
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()


GRIDS_FOLLOW = "the intervention grids follow"  # a build's line, when its grids run after
GRIDS_DONE = r"intervention grids: \d+ forward passes"  # their line, once served with them


def _grids(server: Server, count: int, start: float) -> float | None:
    """Seconds from ``start`` until the server has served the grids that the build
    reported after line ``count`` left for later (None: it left none)."""
    if not server.said(GRIDS_FOLLOW, count):
        return None
    _until(lambda: server.said(GRIDS_DONE, count), "the intervention grids", 0.05)
    return time.perf_counter() - start


def _served_build(port: int) -> str:
    """The build the server serves now (its pages' live script's ``data-build``)."""
    found = re.search(r'data-build="([^"]+)"', _served(port))
    return found.group(1) if found else ""


def _save(
    server: Server, page: Any, write: Callable[[], None], shows: str, images: bool
) -> tuple[Any, ...]:
    """Seconds from ``write()`` until the served HTML, then the reloaded page, show
    ``shows``, until every chart of the page has drawn, and until the grids the save ran
    again are served (None: it ran none)."""
    page.evaluate("() => { window.__beforeSave = true; }")
    count = len(server.lines)
    start = time.perf_counter()
    write()
    served = _until(lambda: shows in _served(server.port), "the save")
    reloaded = (
        f"() => window.__beforeSave === undefined && document.body.innerHTML.includes({shows!r})"
    )
    page.wait_for_function(reloaded, timeout=WAIT_S * 1000, polling=10)
    on_screen = time.perf_counter() - start
    page.wait_for_function(ALL_DRAWN, timeout=WAIT_S * 1000, polling=20)
    drawn = time.perf_counter() - start
    _until(lambda: server.said(r"rendered \d+ page", count), "the build's line", 0.1)
    grids = _grids(server, count, start)
    # The next save starts on the page reloaded with the grids (not timed) and waits for
    # this one's static images (drawn after them).
    build = _served_build(server.port)
    with_grids = f"() => document.querySelector('script[data-build]').dataset.build === {build!r} && {ALL_DRAWN}"  # fmt: skip
    page.wait_for_function(with_grids, timeout=WAIT_S * 1000, polling=20)
    if images and server.said("analysed", count):  # images are drawn after a new analysis
        _until(lambda: server.said("static images drawn", count), "the images", 0.1)
    time.sleep(0.5)
    return served, on_screen, drawn, grids


def _edits(
    server: Server, page: Any, work: Path, sentences: list[str], images: bool
) -> list[tuple]:
    """The three saves of the module docstring, as table rows."""
    file = work / "sentences.txt"

    def sentence(index: int, text: str) -> Callable[[], None]:
        def write() -> None:
            sentences[index] = text
            file.write_text("\n".join(sentences) + "\n", encoding="utf-8")

        return write

    template = work / "checkout" / "templates" / "index.html"

    def edit_template() -> None:
        text = template.read_text(encoding="utf-8")
        template.write_text(text.replace("<h2>The sentences</h2>", "<h2>The sentences, edited</h2>"))  # fmt: skip

    last = len(sentences) - 1
    saves = [
        (
            "one sentence (not an intervention input)",
            sentence(min(4, last), "The cat naps on the warm mat."),
            "The cat naps on the warm mat.",
        ),  # fmt: skip
        ("a template (index.html)", edit_template, "The sentences, edited"),
        (
            "one sentence the mean grid runs on",
            sentence(1, "Why do dogs bark at night?"),
            "Why do dogs bark at night?",
        ),  # fmt: skip
    ]
    return [(what, *_save(server, page, write, shows, images)) for what, write, shows in saves]


def watch_section(ctx: Context) -> Section:
    """``serve --watch``: first build vs ``build``, and saves to the screen."""
    section = Section(TITLES["watch"])
    work = ctx.work / "watch"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    config, sentences, env = _project(ctx, work)
    if not ctx.quick:  # quick mode: section 4b's build of the same study filled them
        _build(config, work / "warm-up", env)  # fills the figure and image caches
    # quick mode: section 4's warm build of the same two sentences (a new process, timed
    # from start to exit), not a third build of them
    build = ctx.warm_build_s if ctx.quick and ctx.warm_build_s else _build(config, work / "built", env)  # fmt: skip
    server = Server(work, config, env)
    try:
        _until(lambda: server.said("^first build") or server.ended(), "the first build", 0.05)
        if server.ended():
            raise RuntimeError(f"serve --watch exited ({server.process.returncode}) before its first build")  # fmt: skip
        first = time.perf_counter() - server.started  # from process start: the site is up
        first_grids = _grids(server, 0, server.started)  # and its grids are in
        with chromium() as browser:
            context = browser.new_context(viewport={"width": 1000, "height": 800})
            page = context.new_page()
            page.add_init_script(WATCH_CHARTS)
            page.goto(f"http://127.0.0.1:{server.port}/index.html#layer=3&head=1")
            page.wait_for_function(ALL_DRAWN, timeout=WAIT_S * 1000)
            rows = _edits(server, page, work, sentences, not ctx.quick)
            context.close()
    finally:
        server.stop()
    _report(section, ctx, build, (first, first_grids), rows, server.lines)
    return section


def _report(section: Section, ctx: Context, build: float, first: tuple, rows: list, lines: list[str]) -> None:  # fmt: skip
    what = "two short sentences, no images; `build` is section 4's" if ctx.quick else "the example's settings, six sentences, images on"  # fmt: skip
    section.add(
        f"One `attnreport serve --watch` process ({what}; warm model, figure and image caches); "
        "the page open in Chromium is the index, over http. A save is timed from the write of "
        'the file; "served" is when the server\'s HTML has changed, "on screen" when the open '
        'page has reloaded (keeping its `#layer=3&head=1`) and shows the edit, "charts drawn" '
        'when every chart of the reloaded page has drawn, "grids" when the server serves the '
        "site again with the intervention grids the save ran (a save puts its pages up first, "
        "with a note in each grid's place; -: it ran none). The server's own lines for each "
        "build (its parts: reading, analysing, rendering) and its grids are quoted below the table.",
        "",
    )
    site_up, grids_in = first
    table = [("`attnreport build`, new process, start to exit", seconds(build), "", "", ""),
             ("`serve --watch` first build, from process start", seconds(site_up),
              f"{site_up / build:.2f}x build", "", _maybe(grids_in))]  # fmt: skip
    table += [(f"save: {w}", seconds(on_screen), f"served {seconds(served)}", seconds(drawn), _maybe(grids))
              for w, served, on_screen, drawn, grids in rows]  # fmt: skip
    section.table(("What", "Wall (on screen)", "Beside", "Charts drawn", "Grids"), table)
    section.add("```", *[line.rstrip() for line in lines], "```", "")
    judged = not ctx.quick
    section.judge(
        ratio_target(
            "serve --watch first build (site up) / build", site_up / build, 1.0, "x", judged
        )
    )
    section.judge(ratio_target("serve --watch: one-sentence edit on screen", rows[0][2], 3.0, "s", judged))  # fmt: skip
    section.judge(ratio_target("serve --watch: template edit on screen", rows[1][2], 1.5, "s", judged))  # fmt: skip


def _maybe(value: float | None) -> str:
    return "-" if value is None else seconds(value)
