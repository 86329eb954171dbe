"""The fake results' whole-array rounding (``r6_array``) gives exactly the floats that
formatting each value with ``r6`` gives: the fixtures' numbers, and so every page and
snapshot built from them, do not depend on which of the two made them."""

from __future__ import annotations

import numpy as np

from tests.fixtures.fake_results import r6, r6_array

EDGES = [0.0, -0.0, 1.0, -1.0, 10.0, 0.1, 1e-3, 1e-5, 0.5, 2.5e-7, 999999.5, 1234565.0]
EDGES += [0.1234565, 9.999995, 99999.95, 0.30000000000000004, 1e300, 5e-324, 1e-308]
EDGES += [np.inf, -np.inf, np.nan]


def test_whole_array_rounding_equals_formatting_each_value():
    rng = np.random.default_rng(3)
    values = np.concatenate(
        [
            EDGES,
            rng.normal(size=20_000),
            rng.uniform(size=20_000),
            np.exp(rng.normal(scale=15, size=20_000)),  # 1e-20 .. 1e20
            np.round(rng.uniform(size=20_000), 7),  # ties at the seventh digit
            -np.round(rng.uniform(size=20_000), 6),  # already rounded
        ]
    )
    fast = r6_array(values.reshape(-1, 2))  # any shape
    slow = np.array([r6(v) for v in values.tolist()]).reshape(-1, 2)
    assert np.array_equal(fast, slow, equal_nan=True)
    assert np.array_equal(np.signbit(fast), np.signbit(slow))  # -0.0 stays -0.0
