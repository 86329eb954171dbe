"""Which sentences get a page of their own: the ``--pages`` build setting.

A corpus of thousands of sentences cannot have a page each; the set-wide figures and
the index still cover the whole corpus. ``--pages N`` gives pages to the first ``N``
sentences; ``--pages 0,5,10-12`` to those indices (0-based, ranges inclusive);
``--pages all`` (the default) to every sentence. The sentences the interventions run on
(``scaling_sentence``: its page shows the intervention figures) always get a page.

The analysis keeps a sentence's own results file (its attention maps and per-query rows)
only for the sentences ``kept_indices`` names: those with a page and the scaling grid's
drawn input (its page shows the intervention figures). Every other sentence, the mean
grid's inputs among them (their tokens are in ``interventions.json``), is in the
set-wide tables only, so a corpus of thousands stays small on disk.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from attnreport.errors import AttnReportError


@dataclass(frozen=True)
class PageChoice:
    """``first`` sentences, or exactly ``indices``; both None: every sentence."""

    first: int | None = None
    indices: tuple[int, ...] | None = None


def parse_pages(text: str) -> PageChoice:
    """``"all"``, ``"N"`` or a comma list of indices and ``a-b`` ranges; one-line errors."""
    text = text.strip()
    if text == "all":
        return PageChoice()
    if text.isdigit():
        return PageChoice(first=int(text))
    indices: list[int] = []
    for item in text.split(","):
        low, _, high = item.strip().partition("-")
        if not low.isdigit() or (high and not high.isdigit()):
            raise AttnReportError(
                f"--pages {text!r}: give 'all', a count N, or indices like 0,5,10-12"
            )
        start, stop = int(low), int(high or low)
        if stop < start:
            raise AttnReportError(f"--pages {text!r}: range {item.strip()} runs backwards")
        indices.extend(range(start, stop + 1))
    return PageChoice(indices=tuple(indices))


def page_indices(choice: PageChoice, n_sentences: int, keep: Iterable[int] = ()) -> tuple[int, ...]:
    """Sorted sentence indices that get a page: the choice plus ``keep`` (in range)."""
    if choice.indices is not None:
        bad = [i for i in choice.indices if not 0 <= i < n_sentences]
        if bad:
            raise AttnReportError(
                f"--pages: sentence {bad[0]} does not exist (the corpus has {n_sentences}, 0-{n_sentences - 1})"
            )
        chosen = set(choice.indices)
    elif choice.first is not None:
        chosen = set(range(min(choice.first, n_sentences)))
    else:
        chosen = set(range(n_sentences))
    chosen |= {i for i in keep if 0 <= i < n_sentences}
    return tuple(sorted(chosen))


def pages_note(text: str, n_sentences: int) -> str | None:
    """The line that says what ``--pages N`` past the end of a set of ``n_sentences``
    means (every sentence gets a page); None for any other choice."""
    choice = parse_pages(text)
    if choice.first is None or choice.first <= n_sentences:
        return None
    return f"--pages {choice.first}: the set has {n_sentences} sentence(s), so every one of them gets a page"


def mean_inputs(mean_sentences: tuple[int, ...] | None, n_sentences: int) -> tuple[int, ...]:
    """The mean grid's inputs: ``mean_sentences``, else the first three sentences."""
    return mean_sentences or tuple(range(min(3, n_sentences)))


def kept_indices(pages: str, n_sentences: int, scaling_sentence: int) -> tuple[int, ...]:
    """Sorted indices of the sentences whose results file an analysis writes: the pages of
    ``pages`` and the scaling grid's drawn input (one-line errors as ``page_indices``).
    The mean grid's inputs need no file: its own file names their tokens."""
    return page_indices(parse_pages(pages), n_sentences, (scaling_sentence,))
