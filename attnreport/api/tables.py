"""A study's results tables as pandas DataFrames, their columns named as the schema names
them (``docs/results-schema.md``; the charts' field names too).

A name is a table of ``set.json.gz`` (pooled over the sentence set: ``focus_pooled``,
``head_roles``...) or of the sentence files (``top``, ``breakdown``, ``tokens``...).
Without a sentence, a name that the set has gives the set's table, and a table only the
sentences have gives every sentence's rows, one after another, after a leading
``sentence`` column (the set's ``focus_by_sentence`` is ``focus`` so made). With
``sentence=i``, sentence ``i``'s own table. pandas is optional: without it, one line says
how to install it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from attnreport.errors import AttnReportError
from attnreport.results import Results, SentenceResults
from attnreport.results.types import sentence_tables, set_tables

if TYPE_CHECKING:
    import pandas as pd

Columns = dict[str, np.ndarray]  # column name -> values, every column one length


def require_pandas() -> None:
    """One line naming the install when pandas is missing."""
    try:
        import pandas  # noqa: F401
    except ImportError:
        raise AttnReportError(
            "results tables as DataFrames need pandas: pip install pandas "
            "(or pip install 'attnreport[notebook]')"
        ) from None


def one_sentence(s: SentenceResults) -> dict[str, Columns]:
    """Sentence ``s``'s tables by name, ``tokens`` first, columns as arrays."""
    tables = {"tokens": s.tokens, **sentence_tables(s)}
    return {name: table.arrays() for name, table in tables.items()}


def table_names(results: Results, sentence: int | None = None) -> tuple[str, ...]:
    """The names ``table_columns`` takes: the set's tables then those only the sentences
    have (``sentence`` None), or sentence ``sentence``'s tables."""
    if sentence is not None:
        return tuple(one_sentence(_sentence(results, sentence)))
    names = list(set_tables(results.set))
    for s in results.sentences:
        names += [name for name in one_sentence(s) if name not in names]
    return tuple(names)


def table_columns(results: Results, name: str, sentence: int | None = None) -> Columns:
    """Table ``name`` as column arrays (see the module docstring for which one)."""
    if name not in table_names(results, sentence):
        where = "the set" if sentence is None else f"sentence {sentence}"
        known = ", ".join(table_names(results, sentence))
        raise AttnReportError(f"{where} has no table {name!r}; its tables: {known}")
    if sentence is not None:
        return one_sentence(_sentence(results, sentence))[name]
    set_table = set_tables(results.set).get(name)
    if set_table is not None:
        return set_table.arrays()
    parts = [(s.index, one_sentence(s).get(name)) for s in results.sentences]
    return _stacked([(i, columns) for i, columns in parts if columns is not None])


def table_frame(results: Results, name: str, sentence: int | None = None) -> pd.DataFrame:
    """``table_columns`` as a DataFrame, one column per schema column, in the schema's order."""
    require_pandas()
    import pandas as pd

    return pd.DataFrame(table_columns(results, name, sentence))


def _stacked(parts: list[tuple[int, Columns]]) -> Columns:
    """The sentences' tables one after another, after a ``sentence`` column."""
    first = parts[0][1]
    sentence = np.concatenate([np.full(len(next(iter(c.values()))), i) for i, c in parts])
    return {
        "sentence": sentence.astype(np.int64),
        **{column: np.concatenate([c[column] for _, c in parts]) for column in first},
    }


def _sentence(results: Results, index: int) -> SentenceResults:
    count = len(results.sentences)
    if not isinstance(index, int) or not 0 <= index < count:
        raise AttnReportError(
            f"sentence {index!r} does not exist: the study has sentences 0-{count - 1}"
        )
    return results.sentences[index]
