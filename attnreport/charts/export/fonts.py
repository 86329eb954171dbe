"""Static images measure their text with vl-convert's own fonts, not the machine's.

vl-convert lays text out (label widths, truncation, the size of a chart with ``autosize``)
with a font database it builds once per process, the first time it needs one: the
system's fonts (through fontconfig on Linux) plus the Liberation Sans it ships in its
wheel. That has two costs:

- **Bytes depend on the machine.** Our charts ask for ``system-ui, …, Arial, sans-serif``;
  a machine with Roboto or Arial installed measures with those, and even another build of
  Liberation Sans moves a title by 1e-14 px. The example site's SVGs must be the same
  bytes on every machine (they are rendered from committed results and compared byte for
  byte).
- **Speed.** A system font is a file: fontdb opens and maps it again for every string it
  measures (about 2,000 per figure here), which was half of the time of an SVG export.

``use_bundled_fonts()`` builds that database first, with fontconfig pointed at an empty
folder (``FONTCONFIG_FILE``, only while it is built), so only the fonts inside
vl-convert's wheel are known: every family falls back to its Liberation Sans, held in
memory, and the bytes depend only on vl-convert's version (which the image cache key
names). It must run before anything else in the process uses vl-convert's fonts;
``images.render_static`` calls it, and it does nothing the second time.

Limit: on macOS and Windows fontdb reads fixed system folders, not fontconfig, so there
the machine's fonts still count.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from xml.sax.saxutils import escape

import vl_convert

FONTS = "vl-convert's own"  # named in images.exporter_version, so in every cache key

_ready = False


def _empty_config(folder: Path) -> Path:
    """A fontconfig file whose only font folder is ``folder`` (which holds no fonts)."""
    config = folder / "fonts.conf"
    config.write_text(
        f'<?xml version="1.0"?>\n<fontconfig><dir>{escape(str(folder))}</dir></fontconfig>\n',
        encoding="utf-8",
    )
    return config


def use_bundled_fonts() -> None:
    """Make this process's vl-convert know only the fonts in its wheel (module docstring)."""
    global _ready
    if _ready:
        return
    saved = os.environ.get("FONTCONFIG_FILE")
    with tempfile.TemporaryDirectory(prefix="attnreport-fonts-") as folder:
        os.environ["FONTCONFIG_FILE"] = str(_empty_config(Path(folder)))
        try:
            # Any use of the font database builds it; registering a folder without fonts
            # is the one that draws nothing.
            vl_convert.register_font_directory(folder)
        finally:
            if saved is None:
                os.environ.pop("FONTCONFIG_FILE", None)
            else:
                os.environ["FONTCONFIG_FILE"] = saved
    _ready = True
