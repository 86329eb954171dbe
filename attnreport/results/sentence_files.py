"""The files of one kept sentence, as ``dump`` and ``analyze`` write them (schema 10):
``sentences/NNN.json.gz`` (its tokens, tables, rank fixes and the list of its parts) and
its part files ``sentences/NNN/lL.js`` (the maps: ``results.map_parts``)."""

from __future__ import annotations

from dataclasses import replace

from attnreport.results.canonical import dump_json_streamed
from attnreport.results.layout import CURRENT
from attnreport.results.map_parts import part_files, part_idents, stored_maps
from attnreport.results.types import SentenceResults, sentence_to_json


def stored(s: SentenceResults) -> SentenceResults:
    """``s`` as its files give it back: scores at the stored precision, and naming its
    part files (what a site drawn from results in memory ships and draws from)."""
    if s.attention is None:
        return s
    maps = stored_maps(s.attention)
    return replace(s, attention=maps, parts=part_idents(s.index, maps))


def sentence_files(s: SentenceResults, lazy: bool = False) -> dict[str, bytes]:
    """Name in the results folder -> bytes of every file of ``s`` (``CURRENT`` layout):
    its parts first, then ``sentences/NNN.json.gz``, which lists them (the order a run
    writes them in: the sentence file marks them complete). ``lazy``: table columns are
    encoded one at a time (``dump_json_streamed``)."""
    s = stored(s)
    files = {} if s.attention is None else part_files(s.index, s.attention, s.n_tokens)
    head = CURRENT.encode(dump_json_streamed(sentence_to_json(s, lazy, files)))
    return {**files, CURRENT.sentence(s.index): head}
