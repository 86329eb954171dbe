"""The sentences of a results folder that have a results file of their own.

Since version 9 an analysis writes ``sentences/NNN.json.gz`` (the attention maps and the
per-query rows) only for the sentences it keeps (``page_choice.kept_indices``: those with
a page and the interventions' inputs); every sentence is in the manifest and the set
tables. The manifest's ``files`` says which are kept. ``LoadedSentences`` is the
sequence of a set of which only some sentences are in memory: what ``load`` gives for
such a folder, and what the site loads one page at a time.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from attnreport.results.layout import Layout
from attnreport.results.types import SentenceResults

KEPT_SINCE = 9  # the first schema version whose folders may leave sentences without a file


def kept_sentences(listed: Mapping[str, Any] | None, count: int, layout: Layout) -> list[int]:
    """Indices of the ``count`` sentences whose file a folder of ``layout`` holds, by its
    manifest's ``files`` (``listed``): every sentence before version 9 (a missing one is
    then an incomplete folder), else those listed."""
    if layout.version < KEPT_SINCE or listed is None:
        return list(range(count))
    return [i for i in range(count) if layout.sentence(i) in listed]


class LoadedSentences(Sequence[SentenceResults]):
    """``sentences[i]`` of a set of ``count`` of which only some are loaded.

    ``len`` is the set size, indexing a loaded sentence gives it, indexing any other is a
    LookupError (a page asked for a sentence that is not loaded, or has no results file);
    iterating yields the loaded ones in index order.
    """

    def __init__(self, count: int, loaded: Sequence[SentenceResults]) -> None:
        self._count = count
        self._by_index = {s.index: s for s in loaded}

    def __len__(self) -> int:
        return self._count

    def __getitem__(self, index: int) -> SentenceResults:  # type: ignore[override]
        if index not in self._by_index:
            raise LookupError(f"sentence {index} is not loaded (it has no results file here)")
        return self._by_index[index]

    def __iter__(self) -> Iterator[SentenceResults]:
        return iter([self._by_index[i] for i in sorted(self._by_index)])

    def indices(self) -> list[int]:
        """The loaded sentences' indices, in order."""
        return sorted(self._by_index)
