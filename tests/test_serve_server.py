"""The preview server on its own (no model): only the site folder is served, live pages
get the reload script on the wire and never on disk, the event stream tells of every
build, and the watcher sees saves."""

from __future__ import annotations

import http.client
import json
import os
import time
from pathlib import Path

import pytest

from attnreport.serve.server import (
    EVENTS,
    PING_S,
    SCRIPT,
    LiveState,
    make_server,
    serve_in_background,
    stop,
    unsafe,
)
from attnreport.serve.watcher import Watcher, snapshot
from tests.patience import patience

PAGE = b"<!doctype html><html><body><p>hello</p></body></html>"


@pytest.fixture
def site(tmp_path) -> Path:
    folder = tmp_path / "site"
    (folder / "data").mkdir(parents=True)
    (folder / "index.html").write_bytes(PAGE)
    (folder / "data" / "x.js").write_text("var x = 1;")
    (folder / "404.html").write_bytes(b"<html><body>missing page</body></html>")
    (tmp_path / "secret.txt").write_text("not for the web")
    (folder / "link.txt").symlink_to(tmp_path / "secret.txt")
    return folder


def _get(port: int, path: str, headers: dict[str, str] | None = None) -> tuple[int, bytes]:
    """GET ``path`` exactly as written (no client-side normalisation of ``..``)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=patience(10))
    try:
        conn.request("GET", path, headers=headers or {})
        answer = conn.getresponse()
        return answer.status, answer.read()
    finally:
        conn.close()


@pytest.fixture(params=[False, True], ids=["plain", "live"])
def served(request, site):
    state = LiveState() if request.param else None
    server = make_server(site, "127.0.0.1", 0, state)
    serve_in_background(server)
    yield server.server_address[1], state
    stop(server, state)


@pytest.mark.parametrize(
    "path", ["/../secret.txt", "/%2e%2e/secret.txt", "/data/../../secret.txt", "/..%2fsecret.txt", "/a\\..\\secret.txt"]
)  # fmt: skip
def test_paths_out_of_the_site_are_refused(served, path):
    port, _state = served
    status, body = _get(port, path)
    assert status == 403 and b"not for the web" not in body
    assert unsafe(path)


def test_a_link_out_of_the_site_is_refused(served):
    port, _state = served
    assert _get(port, "/link.txt")[0] == 403
    assert _get(port, "/data/")[0] == 404  # folders are not listed


def test_pages_get_the_script_on_the_wire_only(served, site):
    port, state = served
    status, body = _get(port, "/index.html", {"If-Modified-Since": "Sun, 01 Jan 2090 00:00:00 GMT"})
    assert status == 200
    assert (site / "index.html").read_bytes() == PAGE  # the file is never changed
    assert _get(port, "/")[1] == body
    assert _get(port, "/data/x.js") == (200, b"var x = 1;")
    if state is None:
        assert body == PAGE and _get(port, SCRIPT)[0] == 404
        return
    before, _, after = PAGE.partition(b"</body>")
    assert body.startswith(before) and body.endswith(b"</body></html>")
    assert f'src="{SCRIPT}" data-build="{state.version}"'.encode() in body
    assert b"attnreport-live-error" not in body
    assert b"EventSource" in _get(port, SCRIPT)[1]
    state.publish("config.toml: 'map_tokens' must be at least 1, got 0 <b>")
    with_banner = _get(port, "/index.html")[1]
    assert b"attnreport-live-error" in with_banner and b"at least 1, got 0 &lt;b&gt;" in with_banner
    state.publish(None)
    assert b"attnreport-live-error" not in _get(port, "/index.html")[1]


def test_a_missing_page_gets_the_sites_404(served):
    port, state = served
    status, body = _get(port, "/s009-gone.html")
    assert status == 404 and b"missing page" in body
    assert (SCRIPT.encode() in body) == (state is not None)


def _events(conn: http.client.HTTPResponse, count: int) -> list[dict]:
    """The next ``count`` build events of an open event stream."""
    found = []
    while len(found) < count:
        line = conn.fp.readline().decode()
        if line.startswith("data: "):
            found.append(json.loads(line[len("data: ") :]))
    return found


def test_the_event_stream_tells_of_every_build(site):
    state = LiveState()
    server = make_server(site, "127.0.0.1", 0, state)
    serve_in_background(server)
    conn = http.client.HTTPConnection("127.0.0.1", server.server_address[1], timeout=patience(10))
    try:
        conn.request("GET", EVENTS)
        stream = conn.getresponse()
        assert stream.headers["Content-Type"] == "text/event-stream"
        (first,) = _events(stream, 1)
        assert first == {"version": state.version, "error": None, "moved": {}}
        state.publish(None, {"s001-a.html": "s001-b.html"})
        (second,) = _events(stream, 1)
        assert second["version"] != first["version"] and second["moved"] == {
            "s001-a.html": "s001-b.html"
        }
        state.publish("bad value")
        assert _events(stream, 1)[0]["error"] == "bad value"
    finally:
        conn.close()
        started = time.perf_counter()
        stop(server, state)
    # An open stream does not hold up the stop: one that did would hold it until its next
    # ping (PING_S) found the reader gone. The stop takes about 0.5 s (the server's poll),
    # so this bound also holds on a busy machine.
    assert time.perf_counter() - started < PING_S


def test_the_watcher_sees_a_same_size_save_and_new_files(tmp_path):
    config, folder = tmp_path / "a.toml", tmp_path / "templates"
    folder.mkdir()
    config.write_text('title = "cat"\n')
    watcher = Watcher(lambda: {"config": [config], "templates": [folder]})
    stamp = config.stat().st_mtime_ns
    config.write_text('title = "dog"\n')
    os.utime(config, ns=(stamp, stamp))  # same size, same time: only the digest differs
    assert watcher.wait() == ["config"]
    (folder / "index.html").write_text("x")
    (folder / ".index.html.tmp-1").write_text("x")  # an atomic writer's temporary file
    assert watcher.wait() == ["templates"]
    assert list(snapshot([folder])) == [str(folder / "index.html")]
