"""Names for the plain dictionaries that remain, so that each use says what it holds.

Our own data is typed where it is made (dataclasses, ``TypedDict``s). What stays a plain
dictionary is a value whose shape is someone else's or is only known at run time:

- ``Json``: a JSON object at the file boundary: parsed from a file before the results
  types (``attnreport.results``) read it, or the value a typed one writes;
- ``VegaSpec``: a Vega-Lite specification, or a view, axis or config inside one (Altair's
  ``to_dict``); its schema is Vega-Lite's;
- ``Row``: one row of a chart's or a table's data, column name -> value;
- ``Options``: keyword arguments handed to another library (transformers, Ray).
"""

from __future__ import annotations

from typing import Any

Json = dict[str, Any]
VegaSpec = dict[str, Any]
Row = dict[str, Any]
Options = dict[str, Any]
