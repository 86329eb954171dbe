"""PNG bytes written and re-encoded without an imaging library: the chunks of a file,
scanline filters undone, and 8-bit pixels encoded as small as the charts allow (RGB when
every pixel is opaque, a palette when there are at most 256 colours, unfiltered scanlines,
zlib level 9). ``optimize_png`` re-encodes vl-convert's PNGs (``images``);
``encode_png`` writes the cell images of ``cells``.
"""

from __future__ import annotations

import struct
import zlib

import numpy as np

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_CHANNELS = {0: 1, 2: 3, 4: 2, 6: 4}  # colour type -> samples per pixel (8-bit images)


def png_chunks(png: bytes) -> list[tuple[bytes, bytes]]:
    """(type, data) of every chunk of a PNG file, in order."""
    if not png.startswith(PNG_SIGNATURE):
        raise ValueError("not a PNG file")
    chunks, at = [], len(PNG_SIGNATURE)
    while at < len(png):
        (length,) = struct.unpack(">I", png[at : at + 4])
        chunks.append((png[at + 4 : at + 8], png[at + 8 : at + 8 + length]))
        at += 12 + length
    return chunks


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def _unfilter(raw: bytes, height: int, row_bytes: int, bpp: int) -> np.ndarray | None:
    """Scanlines of filter None, Sub or Up undone (the ones vl-convert writes); None if
    another filter occurs."""
    rows = np.frombuffer(raw, dtype=np.uint8).reshape(height, row_bytes + 1)
    out = np.empty((height, row_bytes), dtype=np.uint8)
    previous = np.zeros(row_bytes, dtype=np.uint8)
    for r in range(height):
        kind, line = rows[r, 0], rows[r, 1:]
        if kind == 0:
            out[r] = line
        elif kind == 1:
            out[r] = np.cumsum(line.reshape(-1, bpp), axis=0, dtype=np.uint8).reshape(-1)
        elif kind == 2:
            out[r] = line + previous
        else:
            return None
        previous = out[r]
    return out


def _unfiltered(pixels: np.ndarray) -> bytes:
    """Scanlines with filter byte 0 (None) each. On the charts drawn here (flat colour
    runs, palette or full colour) None deflated smaller than per-row adaptive filtering on
    every image of the example, and one deflate at level 9 is most of the time spent."""
    height = pixels.shape[0]
    return np.hstack([np.zeros((height, 1), np.uint8), pixels]).tobytes()


def _reencoded(pixels: np.ndarray, channels: int) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
    """(colour type, PLTE/tRNS chunks, IDAT data) of 8-bit RGBA pixels (height, width, 4)."""
    height, width = pixels.shape[:2]
    if channels == 4 and (pixels[..., 3] == 255).all():
        pixels, channels = pixels[..., :3], 3
    flat = np.ascontiguousarray(pixels).reshape(-1, channels)
    packed = np.zeros(len(flat), dtype=np.uint32)
    for c in range(channels):
        packed = (packed << 8) | flat[:, c]
    colours, index = np.unique(packed, return_inverse=True)
    extra: list[tuple[bytes, bytes]] = []
    if len(colours) <= 256:
        table = np.stack([(colours >> (8 * (channels - 1 - c))) & 255 for c in range(channels)], 1)
        extra.append((b"PLTE", table[:, :3].astype(np.uint8).tobytes()))
        if channels == 4:
            extra.append((b"tRNS", table[:, 3].astype(np.uint8).tobytes()))
        image, colour_type = index.astype(np.uint8).reshape(height, width), 3
    else:
        image = flat.reshape(height, width * channels)
        colour_type = 6 if channels == 4 else 2
    idat = zlib.compress(_unfiltered(image), 9)
    return colour_type, extra, idat


def optimize_png(png: bytes) -> bytes:
    """The same image in fewer bytes (see the module docstring); ``png`` itself when that
    is not smaller or the file is of a kind not handled (only 8-bit, non-interlaced)."""
    chunks = png_chunks(png)
    kinds = [kind for kind, _ in chunks]
    if kinds[0] != b"IHDR" or b"PLTE" in kinds:
        return png
    width, height, depth, colour_type, _, _, interlace = struct.unpack(">IIBBBBB", chunks[0][1])
    channels = _CHANNELS.get(colour_type)
    if depth != 8 or interlace or channels not in (3, 4):
        return png
    raw = zlib.decompress(b"".join(data for kind, data in chunks if kind == b"IDAT"))
    pixels = _unfilter(raw, height, width * channels, channels)
    ancillary = [(k, d) for k, d in chunks[1:] if k not in (b"IDAT", b"IEND")]
    if pixels is None:  # keep the filters, deflate them better
        palette, idat = [], zlib.compress(raw, 9)
    else:
        rgba = pixels.reshape(height, width, channels)
        colour_type, palette, idat = _reencoded(rgba, channels)
    out = _file(width, height, colour_type, [*ancillary, *palette], idat)
    return out if len(out) < len(png) else png


def encode_png(pixels: np.ndarray) -> bytes:
    """A PNG file of 8-bit RGBA ``pixels`` (height, width, 4), encoded as ``_reencoded`` does."""
    height, width = pixels.shape[:2]
    colour_type, palette, idat = _reencoded(pixels, 4)
    return _file(width, height, colour_type, palette, idat)


def _file(
    width: int, height: int, colour_type: int, before: list[tuple[bytes, bytes]], idat: bytes
) -> bytes:
    """A PNG file of 8-bit, non-interlaced samples: its header, the ``before`` chunks
    (ancillary, PLTE, tRNS) in order, one IDAT and the end."""
    header = struct.pack(">IIBBBBB", width, height, 8, colour_type, 0, 0, 0)
    parts = [(b"IHDR", header), *before, (b"IDAT", idat), (b"IEND", b"")]
    return PNG_SIGNATURE + b"".join(_chunk(kind, data) for kind, data in parts)
