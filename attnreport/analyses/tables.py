"""Column tables and the JSON-safe rounding every results file uses.

A ``Table`` maps a column name to a 1-D numpy array; every column has the same length
(see ``docs/results-schema.md``). Ids and positions are int64, statistics float64,
flags bool, labels str. Floats are published rounded to 6 significant digits, exactly as
``float(f"{v:.6g}")`` rounds them, so two runs give byte-identical JSON.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from attnreport.results.rounding import (
    _round_array,
    _round_one,
    triangle_list,
)
from attnreport.results.rounding import column_to_list as _column_to_list

Table = dict[str, np.ndarray]


def as_numpy(values: Any) -> np.ndarray:
    """A numpy view or copy of ``values`` (tensor, array or list); half floats become float64."""
    if isinstance(values, torch.Tensor):
        values = values.detach().cpu()
        if values.is_floating_point() and values.dtype != torch.float32:
            values = values.to(torch.float64)
        return values.numpy()
    return np.asarray(values)


def round_sig(x: Any) -> Any:
    """Round to 6 significant digits exactly as ``float(f"{v:.6g}")`` does.

    A Python or numpy scalar gives a float; a tensor or array gives a float64 ndarray of the
    same shape (vectorised). Rounding is idempotent. Raises ValueError on NaN or inf.
    """
    if isinstance(x, (bool, int, float, np.number)):
        return _round_one(float(x))
    return _round_array(as_numpy(x))


def concat_tables(tables: Sequence[Table]) -> Table:
    """Rows of ``tables`` one after the other; all must have the same column names.

    An empty sequence gives an empty table ``{}``. Column order is the first table's.
    """
    if not tables:
        return {}
    names = list(tables[0])
    for table in tables[1:]:
        if set(table) != set(names):
            raise ValueError(f"cannot concatenate tables with columns {names} and {list(table)}")
    return {name: np.concatenate([as_numpy(t[name]) for t in tables]) for name in names}


def table_length(table: Table) -> int:
    """Number of rows; raises ValueError when columns differ in length or are not 1-D."""
    lengths = {name: np.shape(values) for name, values in table.items()}
    if any(len(shape) != 1 for shape in lengths.values()):
        raise ValueError(f"table columns must be 1-D, got shapes {lengths}")
    if len({shape[0] for shape in lengths.values()}) > 1:
        raise ValueError(f"table columns differ in length: {lengths}")
    return next(iter(lengths.values()))[0] if lengths else 0


def column_to_list(values: Any) -> list[Any]:
    """One column as JSON-ready Python values (see ``attnreport.results.rounding``)."""
    return _column_to_list(as_numpy(values))


def table_to_json(table: Table) -> dict[str, dict[str, list[Any]]]:
    """``{"columns": {name: [values...]}}`` with floats rounded (see ``round_sig``).

    Raises ValueError on NaN/inf or columns of different lengths. Same input, same output:
    ``json.dumps`` of two calls is byte-identical.
    """
    table_length(table)
    return {"columns": {name: column_to_list(values) for name, values in table.items()}}


def triangle(matrix: Any, allowed: Any = None, places: int | None = None) -> list[list[Any]]:
    """``rounding.triangle_list`` of a tensor, array or list (and of its ``allowed`` mask),
    at ``places`` decimals when given (else 6 significant digits)."""
    mask = None if allowed is None else as_numpy(allowed)
    return triangle_list(as_numpy(matrix), mask, places)
