"""``attnreport serve --watch`` as a user runs it: a process on a free port, edits saved
to disk, the served HTML polled until each change shows (bounded waits), and in
Chromium an open page that reloads keeping its ``#layer=..&head=..``.

One server (a tiny model, two short sentences, no static images) is shared by the
module. It runs from a copy of the package and its templates (``PYTHONPATH``), so the
template edit never touches the checkout's ``templates/``.
"""

from __future__ import annotations

import http.client
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.patience import patience
from tests.tiny_models import save_tiny_model

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parent.parent
FIRST_BUILD_S = patience(240)  # a bounded wait: the process imports torch and builds once
SAVE_S = patience(120)  # a save's rebuild
BANNER = b"attnreport-live-error"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def get(port: int, path: str) -> tuple[int, bytes]:
    """GET ``path`` as written (``..`` is sent, not normalised away by the client)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=patience(10))
    try:
        conn.request("GET", path)
        answer = conn.getresponse()
        return answer.status, answer.read()
    except OSError:
        return 0, b""
    finally:
        conn.close()


def wait_for(check: Callable[[], bool], seconds: float, what: str, lines: list[str]) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.2)
    pytest.fail(f"{what} did not show within {seconds:.0f} s; server said: {lines[-5:]}")


@dataclass
class Served:
    process: subprocess.Popen
    port: int
    project: Path
    checkout: Path
    lines: list[str] = field(default_factory=list)

    def page(self, name: str = "index.html") -> bytes:
        return get(self.port, "/" + name)[1]

    def wait(self, check: Callable[[bytes], bool], what: str, name: str = "index.html") -> bytes:
        seen: list[bytes] = []

        def holds() -> bool:
            seen[:] = [self.page(name)]
            return check(seen[0])

        wait_for(holds, SAVE_S, what, self.lines)
        return seen[0]

    def sentence_page(self, index: int) -> str:
        found = re.findall(rf'href="(s{index:03d}-[^"]+\.html)"', self.page().decode())
        assert found, f"no page of sentence {index}"
        return found[0]


def copy_checkout(target: Path) -> Path:
    """The package and its templates, as a checkout ``templates_root`` recognises."""
    ignore = shutil.ignore_patterns("__pycache__")
    shutil.copytree(REPO / "attnreport", target / "attnreport", ignore=ignore)
    shutil.copytree(REPO / "templates", target / "templates", ignore=ignore)
    shutil.copy(REPO / "pyproject.toml", target / "pyproject.toml")
    return target


def write_sentences(project: Path, *sentences: str) -> None:
    (project / "sentences.txt").write_text("\n".join(sentences) + "\n", encoding="utf-8")


CONFIG = 'model = "{model}"\nsentences = "sentences.txt"\nout = "site"\ndate = "2026-01-01"\nimages = false\n'


@pytest.fixture(scope="module")
def served(tmp_path_factory) -> Iterator[Served]:
    root = tmp_path_factory.mktemp("serve-live")
    model = save_tiny_model("llama", root / "model")
    checkout = copy_checkout(root / "checkout")
    project = root / "project"
    project.mkdir()
    (project / "attnreport.toml").write_text(CONFIG.format(model=model), encoding="utf-8")
    write_sentences(project, "the cat sat on the mat .", "the dog chased the cat")
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(checkout), "ATTNREPORT_IMAGE_WORKERS": "1"}
    env["SOURCE_DATE_EPOCH"] = "1767225600"  # analysed on 2026-01-01, the date CONFIG sets
    cmd = [sys.executable, "-m", "attnreport.cli", "serve", "--watch", "--port", str(port)]
    process = subprocess.Popen(
        cmd, cwd=project, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    server = Served(process, port, project, checkout)
    reader = threading.Thread(target=lambda: server.lines.extend(process.stdout), daemon=True)
    reader.start()
    try:
        wait_for(lambda: b"the dog chased" in server.page(), FIRST_BUILD_S, "the first build", server.lines)  # fmt: skip
        yield server
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=patience(30))


def test_saves_show_in_the_served_pages(served):
    first = served.page()
    assert b"/__attnreport/live.js" in first and BANNER not in first
    on_disk = (served.project / "site" / "index.html").read_bytes()
    assert re.sub(rb"<script src=\"/__attnreport/live.js\"[^>]*></script>", b"", first) == on_disk

    write_sentences(served.project, "the cat sat on the mat .", "the mouse chased the dog")
    served.wait(lambda page: b"the mouse chased the dog" in page, "the edited sentence")
    said = lambda: any("analysed sentence(s) 1," in line for line in served.lines)  # noqa: E731
    wait_for(said, patience(10), "the build's line", served.lines)

    template = served.checkout / "templates" / "index.html"
    seen = len(served.lines)
    template.write_text(template.read_text().replace("<h2>The sentences</h2>", "<h2>Our sentences</h2>"))  # fmt: skip
    served.wait(lambda page: b"<h2>Our sentences</h2>" in page, "the template edit")
    # its line (the grids of the sentence edit, stopped by it, may follow)
    built = lambda: [line for line in served.lines[seen:] if "templates changed" in line]  # noqa: E731
    wait_for(lambda: bool(built()), patience(10), "its line", served.lines)
    assert "analysed" not in built()[0]

    for path in ("/../attnreport.toml", "/%2e%2e/attnreport.toml", "/data/../../sentences.txt"):
        status, body = get(served.port, path)
        assert status == 403 and b"sentences.txt" not in body


def test_a_bad_config_keeps_the_last_site_with_a_banner(served):
    config = served.project / "attnreport.toml"
    good = config.read_text()
    config.write_text(good + "map_tokens = 0\n")
    page = served.wait(lambda page: BANNER in page, "the error banner")
    assert b"map_tokens" in page and b"the cat sat on the mat" in page
    said = lambda: any(line.startswith("error: ") and "map_tokens" in line for line in served.lines)  # noqa: E731
    wait_for(said, patience(10), "the error line", served.lines)
    assert BANNER not in (served.project / "site" / "index.html").read_bytes()
    name = served.sentence_page(0)
    assert BANNER in served.page(name)  # every page says so, the site is the last good one

    config.write_text(good)
    served.wait(lambda page: BANNER not in page and b"the cat sat" in page, "the recovery")


# Notes on the page when its live script's event stream has told it the current build (it
# does on connecting): from then on the page hears of every build.
STREAM_OPEN = """(() => {
  const Native = window.EventSource;
  window.EventSource = function (url, options) {
    const source = new Native(url, options);
    source.addEventListener('build', () => { window.streamOpen = true; });
    return source;
  };
})()"""


def _local_only(route) -> None:
    if route.request.url.startswith("http://127.0.0.1:"):
        route.continue_()
    else:
        route.abort()


@pytest.mark.browser
def test_an_open_page_reloads_and_keeps_its_hash(served, browser):
    context = browser.new_context()
    context.route("**/*", _local_only)
    context.add_init_script(STREAM_OPEN)
    page = context.new_page()
    try:
        name = served.sentence_page(1)
        page.goto(f"http://127.0.0.1:{served.port}/{name}#layer=1&head=0")
        page.wait_for_function("() => window.streamOpen === true")  # not a fixed wait
        page.evaluate("() => { window.beforeSave = true; }")
        write_sentences(served.project, "the cat sat on the mat , and the dog sat .", "the mouse chased the dog")  # fmt: skip
        page.wait_for_function("() => window.beforeSave === undefined", timeout=SAVE_S * 1000)
        page.wait_for_load_state()
        assert page.evaluate("() => location.hash") == "#layer=1&head=0"
        assert page.url.endswith(f"/{name}#layer=1&head=0")

        # Its own sentence edited, the page moves to its new name, hash and all.
        write_sentences(served.project, "the cat sat on the mat , and the dog sat .", "the mouse chased the cat")  # fmt: skip
        page.wait_for_url(re.compile(r".*/s001-the-mouse-chased-the-cat\.html#layer=1&head=0$"), timeout=SAVE_S * 1000)  # fmt: skip
        assert "the mouse chased the cat" in page.content()
    finally:
        context.close()


def test_ctrl_c_stops_cleanly(served):
    served.process.send_signal(signal.SIGINT)
    assert served.process.wait(timeout=patience(60)) == 0
    said = lambda: any("stopped" in line for line in served.lines)  # noqa: E731
    wait_for(said, patience(10), "the closing line", served.lines)  # read by a thread
    assert get(served.port, "/")[0] == 0  # nothing listens any more
