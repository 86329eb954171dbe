"""A folder of exported static images keyed by what their bytes depend on.

Key: sha256 of the static spec as canonical JSON (sorted keys, compact) and the
exporter's version (``images.exporter_version``: vl-convert, Vega-Lite, PNG scale and our
post-processing). Results are byte-reproducible, so an unchanged figure has an unchanged
key and its images are read back instead of drawn again.

Entry file ``images/KEY[:2]/KEY.bin``: a header line
``attnreport-images 1 SVG_BYTES PNG_BYTES SHA256(SVG + PNG)\\n`` then the SVG and PNG
bytes. An entry whose header, lengths or checksum do not match (truncated, corrupt, or
another format) reads as missing, so it is drawn again and rewritten. Entries are written
to a temporary file in the same folder and renamed into place: a concurrent build reads
either the whole old entry, the whole new one, or nothing. Reading an entry sets its
modification time, which ``usercache.prune`` takes as its last use.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import tempfile
from pathlib import Path

from attnreport.jsontypes import VegaSpec

log = logging.getLogger(__name__)

MAGIC = b"attnreport-images 1"


def canonical_json(spec: VegaSpec) -> bytes:
    """The spec as compact JSON with sorted keys: equal specs give equal bytes."""
    return json.dumps(spec, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def image_key(spec: VegaSpec, exporter: str) -> str:
    """Cache key (64 hex digits) of a static spec drawn by exporter version ``exporter``."""
    digest = hashlib.sha256(exporter.encode() + b"\n")
    digest.update(canonical_json(spec))
    return digest.hexdigest()


def _encode(svg: bytes, png: bytes) -> bytes:
    check = hashlib.sha256(svg + png).hexdigest()
    return b"%s %d %d %s\n" % (MAGIC, len(svg), len(png), check.encode()) + svg + png


def _decode(data: bytes) -> tuple[bytes, bytes] | None:
    """(SVG, PNG) of an entry's bytes, or None when they are not a whole, intact entry."""
    header, newline, body = data.partition(b"\n")
    parts = header.split(b" ")
    if not newline or len(parts) != 5 or b" ".join(parts[:2]) != MAGIC:
        return None
    try:
        n_svg, n_png = int(parts[2]), int(parts[3])
    except ValueError:
        return None
    if n_svg < 0 or n_png < 0 or len(body) != n_svg + n_png:
        return None
    if hashlib.sha256(body).hexdigest().encode() != parts[4]:
        return None
    return body[:n_svg], body[n_svg:]


class ImageCache:
    """Exported (SVG, PNG) pairs under ``root`` (normally ``cache_dir() / "images"``).

    Never raises on I/O: a cache that cannot be read or written only costs the export.
    """

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.bin"

    def get(self, key: str) -> tuple[bytes, bytes] | None:
        """The entry of ``key``, or None when absent or not intact."""
        path = self.path(key)
        try:
            data = path.read_bytes()
        except OSError:
            return None
        pair = _decode(data)
        if pair is None:
            log.info("image cache entry %s is damaged; it will be drawn again", key)
            return None
        with contextlib.suppress(OSError):  # the last use, for ``usercache.prune``
            os.utime(path)
        return pair

    def put(self, key: str, svg: bytes, png: bytes) -> None:
        """Store an entry atomically (temporary file in the same folder, then rename)."""
        target = self.path(key)
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=target.parent)
            try:
                with os.fdopen(fd, "wb") as handle:
                    handle.write(_encode(svg, png))
                os.replace(tmp, target)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
        except OSError as error:
            log.warning("image cache: cannot write %s: %s", target, error)


def default_cache() -> ImageCache:
    """The user's image cache, ``cache_dir()/images`` (see ``attnreport.usercache``)."""
    from attnreport.usercache import cache_dir

    return ImageCache(cache_dir() / "images")
