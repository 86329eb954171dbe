"""attnreport init writes a usable starter and never overwrites; serve refuses a folder with no site."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.request

from click.testing import CliRunner

from attnreport.cli import main
from attnreport.config import load_settings
from attnreport.sentences import read_sentences
from tests.patience import patience


def test_init_writes_a_valid_config_and_sentences(tmp_path):
    result = CliRunner().invoke(main, ["init", "--dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    settings = load_settings(tmp_path / "attnreport.toml")
    assert settings.model == "default" and settings.sentences == str(tmp_path / "sentences.txt")
    assert len(read_sentences(tmp_path / "sentences.txt")) >= 6


def test_init_never_overwrites(tmp_path):
    (tmp_path / "sentences.txt").write_text("mine\n")
    result = CliRunner().invoke(main, ["init", "--dir", str(tmp_path)])
    assert result.exit_code == 0 and "sentences.txt (already there)" in result.output
    assert (tmp_path / "sentences.txt").read_text() == "mine\n"
    assert (tmp_path / "attnreport.toml").is_file()


def test_serve_needs_a_built_site(tmp_path):
    result = CliRunner().invoke(main, ["serve", str(tmp_path)])
    assert result.exit_code == 1 and "has no index.html" in result.output


def test_serve_serves_the_site(tmp_path):
    (tmp_path / "index.html").write_text("<h1>hello</h1>")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    cmd = [sys.executable, "-m", "attnreport.cli", "serve", str(tmp_path), "--port", str(port)]
    server = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + patience(30)  # the process starts and listens
        while True:
            try:
                body = urllib.request.urlopen(
                    f"http://127.0.0.1:{port}/index.html", timeout=patience(2)
                ).read()
                break
            except OSError:
                assert time.monotonic() < deadline and server.poll() is None, "not served"
                time.sleep(0.1)
        assert body == b"<h1>hello</h1>"
    finally:
        server.terminate()
        server.wait(timeout=patience(10))
