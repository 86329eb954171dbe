"""What ``attnreport analyze`` spends from process start to a loaded model, by phase.

    python benchmarks/analyze_startup.py            # one run, JSON on stdout
    python -X importtime benchmarks/analyze_startup.py 2> imports.txt   # the import tree

Imports exactly what the ``analyze`` command imports before the study runs (the CLI,
``attnreport.build``, transformers' logging switches, the output folder check), then
loads the default model from the cache, timing each phase; it also lists which of the
heavy optional libraries ended up imported. Run it with ``PYTHONPATH`` pointing at two
checkouts to compare them; wall times on a shared machine are inflated by its load, so
the CPU time (``time.process_time``, all threads) is printed too.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

WATCHED = ("torch", "transformers", "accelerate", "gguf", "altair", "jinja2", "vl_convert")


def main() -> None:
    marks = {"start": time.perf_counter()}
    cpu = {"start": time.process_time()}
    import attnreport.cli as cli

    marks["cli"] = time.perf_counter()
    cpu["cli"] = time.process_time()
    import attnreport.build  # noqa: F401  (what analyze imports)
    from attnreport import output

    marks["study modules (torch)"] = time.perf_counter()
    cpu["study modules (torch)"] = time.process_time()
    cli.quiet_libraries()
    marks["transformers"] = time.perf_counter()
    cpu["transformers"] = time.process_time()
    output.check_output(Path(os.devnull).parent / "attnreport-probe", [], True)
    marks["output check"] = time.perf_counter()
    cpu["output check"] = time.process_time()
    from attnreport.models.loading import load_model

    load_model("default")
    marks["model load (cached)"] = time.perf_counter()
    cpu["model load (cached)"] = time.process_time()
    names = list(marks)
    pairs = list(zip(names, names[1:], strict=False))
    phases = {b: round(marks[b] - marks[a], 3) for a, b in pairs}
    phases_cpu = {b: round(cpu[b] - cpu[a], 3) for a, b in pairs}
    print(
        json.dumps(
            {
                "phases_s": phases,
                "phases_cpu_s": phases_cpu,
                "in_process_s": round(marks[names[-1]] - marks["start"], 3),
                "cpu_s": round(time.process_time(), 3),  # includes interpreter start
                "imported": [m for m in WATCHED if m in sys.modules],
                "modules": len(sys.modules),
                "attnreport": os.path.dirname(cli.__file__),
            }
        )
    )


if __name__ == "__main__":
    main()
