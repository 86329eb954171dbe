"""Where a sentence page opens: read from the results alone (no charts, no Altair)."""

from __future__ import annotations

import numpy as np

from attnreport.results.types import SentenceResults


def default_head(sentence: SentenceResults) -> tuple[int, int]:
    """The (layer, head) a sentence page opens on: the results' ``view_head`` when the
    user chose one, else the strongest first-token focus.

    Ties go to the lowest layer, then the lowest head; (0, 0) when there is no focus table.
    """
    if sentence.view_head is not None:
        layer, head = sentence.view_head
        return int(layer), int(head)
    focus = sentence.tables.focus.arrays()
    if not len(focus["layer"]):
        return 0, 0
    order = np.lexsort((focus["head"], focus["layer"], -focus["first_focus"]))
    best = order[0]
    return int(focus["layer"][best]), int(focus["head"][best])
