"""``verify``'s three checks per dtype: errors, tolerances and their ratio (issue 12).

For each model and dtype, runs ``attnreport verify``'s checks (``verify_sentences``) on the
built-in sentence set and prints one markdown row per check: the max abs error, the
tolerance ``attnreport.tolerance`` derives from the dtype and the magnitudes, and
error / tolerance. ``--tiny`` adds the tiny random-weight model of every family
(``tests/tiny_models.py``, float32 weights cast on load; run from the repository root).
The numbers in ``docs/precision.md`` come from this script.

    python benchmarks/bf16_diagnosis.py                       # the default model
    python benchmarks/bf16_diagnosis.py --tiny --dtypes bfloat16
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from attnreport.session import open_session
from attnreport.verification import verify_sentences

SHORT = ("1 probabilities", "2 updates vs block output", "3 terms vs logit")


def rows(label: str, model: str, dtype: str) -> list[str]:
    """One markdown row per check of ``model`` loaded in ``dtype``."""
    session = open_session(model, None, dtype=dtype)
    checks = verify_sentences(session.model, session.specs, session.token_tensors())
    return [
        f"| {label} | {dtype} | {short} | {c.max_error:.3g} | {c.tolerance:.3g} | "
        f"{c.max_error / c.tolerance:.3f} | {'ok' if c.passed else 'FAIL'} |"
        for short, c in zip(SHORT, checks, strict=True)
    ]


def tiny_models(root: Path) -> dict[str, str]:
    from tests.tiny_models import FAMILY_NAMES, save_tiny_model

    return {name: str(save_tiny_model(name, root / name)) for name in FAMILY_NAMES}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", action="append", help="a model (default: the embedded one)")
    parser.add_argument("--tiny", action="store_true", help="also every tiny family")
    parser.add_argument("--dtypes", nargs="+", default=["float32", "bfloat16", "float16"])
    args = parser.parse_args()
    models = {m: m for m in args.model or ["default"]}
    print("| model | dtype | check | max abs error | tolerance | error / tolerance | |")
    print("| --- | --- | --- | ---: | ---: | ---: | --- |")
    with tempfile.TemporaryDirectory() as tmp:
        if args.tiny:
            models |= tiny_models(Path(tmp))
        for label, model in models.items():
            for dtype in args.dtypes:
                print("\n".join(rows(label, model, dtype)), flush=True)


if __name__ == "__main__":
    main()
