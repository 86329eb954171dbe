"""The preview server: the site folder over http on 127.0.0.1, and for ``--watch`` an
event stream that tells open pages to reload.

- Only the site folder is served: a request whose path has a ``..`` segment (after
  percent-decoding), a backslash or a NUL is refused with 403, and so is a file that
  resolves (through a link) outside the folder. Folders are not listed.
- Live (``--watch``): every HTML response gets ``live.js`` (and, while the last build
  failed, a banner with its one-line error) inserted before ``</body>``, on the way out;
  the files on disk are never changed, so a written site holds nothing of the watcher.
  ``/__attnreport/events`` is a Server-Sent Events stream of ``build`` events
  (``LiveState.payload``); ``/__attnreport/live.js`` is the script. Nothing is cached
  by the browser (``Cache-Control: no-store``, ``If-Modified-Since`` ignored: file
  times have one-second resolution in HTTP and two saves can fall in one second).
- A missing file gets the site's ``404.html`` when there is one.
"""

from __future__ import annotations

import functools
import html
import http.server
import json
import os
import secrets
import threading
import urllib.parse
from importlib import resources
from pathlib import Path
from typing import Any

PREFIX = "/__attnreport/"
EVENTS = PREFIX + "events"
SCRIPT = PREFIX + "live.js"
PING_S = 15.0  # a comment line this often finds out that a reader has gone


class LiveState:
    """What open pages are told: the build ``version`` (a token of this server and a
    counter, so a page served by an earlier server reloads too), the last build's
    ``error`` (None when it succeeded) and the pages it ``moved``; ``changed`` wakes the
    event streams; ``stopping`` ends them."""

    def __init__(self) -> None:
        self.token = secrets.token_hex(4)
        self.count = 0
        self.error: str | None = None
        self.moved: dict[str, str] = {}
        self.stopping = False
        self.changed = threading.Condition()

    @property
    def version(self) -> str:
        return f"{self.token}-{self.count}"

    def publish(self, error: str | None, moved: dict[str, str] | None = None) -> None:
        """A build finished (``error``: why it failed): every open page is told."""
        with self.changed:
            self.count += 1
            self.error, self.moved = error, dict(moved or {})
            self.changed.notify_all()

    def stop(self) -> None:
        with self.changed:
            self.stopping = True
            self.changed.notify_all()

    def payload(self) -> str:
        return json.dumps({"version": self.version, "error": self.error, "moved": self.moved})


BANNER_STYLE = (
    "position:fixed;top:0;left:0;right:0;z-index:2147483647;margin:0;padding:.6em 1em;"
    "background:#b00020;color:#fff;font:14px/1.4 system-ui,sans-serif;white-space:pre-wrap"
)


def live_snippet(state: LiveState) -> bytes:
    """What goes before ``</body>`` of a served page: the banner (when the last build
    failed) and the script, labelled with the build it was served in."""
    banner = ""
    if state.error is not None:
        text = html.escape(f"attnreport serve: the last save did not build: {state.error}")
        banner = f'<div id="attnreport-live-error" role="alert" style="{BANNER_STYLE}">{text}</div>'
    version = html.escape(state.version)
    return f'{banner}<script src="{SCRIPT}" data-build="{version}"></script>'.encode()


def inject(page: bytes, snippet: bytes) -> bytes:
    """``snippet`` before the last ``</body>`` of ``page`` (at its end when it has none)."""
    at = page.lower().rfind(b"</body>")
    return page + snippet if at < 0 else page[:at] + snippet + page[at:]


PLACEHOLDER = b"<!doctype html><html><head><meta charset='utf-8'><title>attnreport</title></head><body><p>No site yet: it is being built.</p></body></html>"


def unsafe(path: str) -> bool:
    """Whether a request path could leave the site folder: a ``..`` segment (also
    percent-encoded), a backslash or a NUL."""
    decoded = urllib.parse.unquote(path.split("?", 1)[0].split("#", 1)[0])
    return "\\" in decoded or "\0" in decoded or ".." in decoded.split("/")


class SiteHandler(http.server.SimpleHTTPRequestHandler):
    """Serves ``directory`` (see the module docstring); live when ``state`` is given."""

    state: LiveState | None = None

    def do_GET(self) -> None:
        self._answer(head=False)

    def do_HEAD(self) -> None:
        self._answer(head=True)

    def _answer(self, head: bool) -> None:
        if unsafe(self.path):
            self.send_error(403, "path outside the site folder")
            return
        route = urllib.parse.urlsplit(self.path).path
        if self.state is not None and route == EVENTS:
            self._events()
            return
        if self.state is not None and route == SCRIPT:
            script = resources.files("attnreport.serve").joinpath("live.js").read_bytes()
            self._send(script, "text/javascript; charset=utf-8", head)
            return
        target = Path(self.translate_path(self.path))
        root = Path(self.directory).resolve()
        if target.exists() and not target.resolve().is_relative_to(root):
            self.send_error(403, "path outside the site folder")
            return
        if self.state is not None and target.is_dir() and route.endswith("/"):
            target = target / "index.html"
        if self.state is not None and target.suffix == ".html" and target.is_file():
            self._send(inject(target.read_bytes(), live_snippet(self.state)), "text/html", head)
            return
        if self.state is not None and route == "/" and not target.exists():
            self._send(inject(PLACEHOLDER, live_snippet(self.state)), "text/html", head)
            return
        if "If-Modified-Since" in self.headers:
            del self.headers["If-Modified-Since"]
        super().do_HEAD() if head else super().do_GET()

    def _send(self, body: bytes, kind: str, head: bool, status: int = 200) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind if "charset" in kind else kind + "; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if not head:
            self.wfile.write(body)

    def end_headers(self) -> None:
        self.send_header("Cache-Control", "no-store")
        super().end_headers()

    def list_directory(self, path: str | os.PathLike[str]) -> None:
        self.send_error(404, "no index.html in this folder")
        return None

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        page = Path(self.directory) / "404.html"
        if code != 404 or not page.is_file():
            super().send_error(code, message, explain)
            return
        body = page.read_bytes()
        if self.state is not None:
            body = inject(body, live_snippet(self.state))
        self._send(body, "text/html", self.command == "HEAD", status=404)

    def _events(self) -> None:
        """The ``build`` event stream: the current build at once, then every new one."""
        state = self.state
        assert state is not None
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        told = None
        try:
            while True:
                with state.changed:
                    state.changed.wait_for(
                        lambda told=told: state.stopping or state.version != told, timeout=PING_S
                    )
                    if state.stopping:
                        return
                    version, payload = state.version, state.payload()
                message = f"event: build\ndata: {payload}\n\n" if version != told else ": ping\n\n"
                self.wfile.write(message.encode())
                self.wfile.flush()
                told = version
        except (BrokenPipeError, ConnectionResetError, OSError):
            return

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (the base's name)
        return None  # the terminal shows builds, not every request


class SiteServer(http.server.ThreadingHTTPServer):
    daemon_threads = True  # a reader of the event stream never holds up Ctrl-C
    block_on_close = False


def make_server(directory: Path, host: str, port: int, state: LiveState | None) -> SiteServer:
    """A server of ``directory`` on ``host:port`` (port 0: any free one); live with ``state``.
    Raises OSError when it cannot listen."""
    handler = type("Handler", (SiteHandler,), {"state": state})
    bound = functools.partial(handler, directory=str(directory))
    return SiteServer((host, port), bound)


def serve_in_background(server: SiteServer) -> threading.Thread:
    thread = threading.Thread(target=server.serve_forever, name="attnreport-serve", daemon=True)
    thread.start()
    return thread


def stop(server: SiteServer, state: LiveState | None) -> None:
    """End the event streams, stop accepting requests and close the socket."""
    if state is not None:
        state.stop()
    server.shutdown()
    server.server_close()
