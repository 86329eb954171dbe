"""Claims tested: each literature claim as a declared test, one module per claim.

A claim module declares its source, the source's exact scope and the statistic it
computes inside that scope, one signed effect per sentence (a comparison made within the
sentence), and registers a function ``ClaimInputs -> Claim | None`` with ``@claim(order)``;
the verdict comes from ``verdicts.verdict``, the one rule (``verdicts.RULE``). Properties
that hold by construction register with ``@check(order)`` and give a ``Check``: passed or
failed, never support. Every module of this package is imported on first use, so a new
claim is one module that registers itself by existing.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from attnreport.results import Manifest, SetResults
from attnreport.results.interventions import Interventions
from attnreport.results.types import set_tables
from attnreport.site.words.verdicts import Verdict

SOURCES = {
    "blog": "the source blog post",
    "streamingllm": "Xiao et al., StreamingLLM (ICLR 2024)",
    "gu": "Gu et al. (ICLR 2025)",
    "seeds": "the source figures (seeds 000-002)",
    "seed003": "the source's mean-replacement figure (seed 003)",
}


@dataclass(frozen=True)
class ClaimInputs:
    """What a claim's test may read: ``set.json``'s tables by name, the typed interventions
    (None: none), each sentence's own first token id (after the BOS a run puts first) and
    token count, whether the run put a BOS first, and the model's heads per layer, KV heads
    and sliding windows."""

    tables: Mapping[str, Any]
    interventions: Interventions | None = None
    first_ids: Sequence[int] = ()
    n_tokens: Sequence[int] = ()
    bos_added: bool = False
    n_heads: int = 0
    n_kv_heads: int = 0
    windows: Mapping[int, int] = field(default_factory=dict)
    positional: str = ""  # how positions enter the scores: "rope", "alibi", ...
    features: tuple[str, ...] = ()  # what the model adds to plain attention ("sinks", ...)

    @property
    def scores_only_qk(self) -> bool:
        """Whether a score is q·k alone (scaled): no ALiBi bias and no learned sink logit,
        which an intervention on Q or K does not change."""
        return self.positional != "alibi" and "sinks" not in self.features

    @classmethod
    def of(
        cls, set_results: SetResults, interventions: Interventions | None, manifest: Manifest
    ) -> ClaimInputs:
        """The inputs of one model's results."""
        model, sentences = manifest.model, manifest.sentences
        bos = bool(manifest.settings.extra.get("bos_added", False))
        return cls(
            tables=set_tables(set_results),
            interventions=interventions,
            first_ids=[s.token_ids[int(bos)] if len(s.token_ids) > bos else -1 for s in sentences],
            n_tokens=[s.n_tokens for s in sentences],
            bos_added=bos,
            n_heads=model.n_heads,
            n_kv_heads=model.n_kv_heads,
            windows=dict(model.layer_windows),
            positional=model.positional,
            features=tuple(model.features),
        )


@dataclass(frozen=True)
class Claim:
    """One claim as tested. ``scope``: the source's scope in words (layers, tokens,
    statistic, inputs); ``test``: what each sentence's effect is and what no effect is;
    ``numbers``: the median effect and its interval (``verdicts.interval_words``);
    ``figure``: the key of the figure it is judged on, on the index (``sentence`` None)
    or on a sentence's page."""

    key: str
    hypothesis: str
    source: str  # a key of SOURCES
    scope: str
    test: str
    verdict: Verdict
    numbers: str
    evidence: str
    breakers: str
    figure: str
    sentence: int | None = None


@dataclass(frozen=True)
class Check:
    """A property that holds by construction, checked on this run: passed or failed."""

    key: str
    property: str
    source: str  # a key of SOURCES
    passed: bool
    evidence: str
    figure: str
    sentence: int | None = None


Tester = Callable[[ClaimInputs], Any]
CLAIMS: dict[str, tuple[int, Tester]] = {}
CHECKS: dict[str, tuple[int, Tester]] = {}


def _registers(into: dict[str, tuple[int, Tester]], order: int) -> Callable[[Tester], Tester]:
    def register(test: Tester) -> Tester:
        into[f"{test.__module__}.{test.__name__}"] = (order, test)
        return test

    return register


def claim(order: int) -> Callable[[Tester], Tester]:
    """Register the decorated ``ClaimInputs -> Claim | None`` as a claim's test; claims are
    listed by ``order``."""
    return _registers(CLAIMS, order)


def check(order: int) -> Callable[[Tester], Tester]:
    """Register the decorated ``ClaimInputs -> Check | None`` as a check."""
    return _registers(CHECKS, order)


@cache
def _import_modules() -> None:
    for module in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{module.name}")


def _run(tests: dict[str, tuple[int, Tester]], inputs: ClaimInputs) -> list[Any]:
    _import_modules()
    found = (test(inputs) for _, test in sorted(tests.values(), key=lambda t: t[0]))
    return [f for f in found if f is not None]


def tested_claims(inputs: ClaimInputs) -> list[Claim]:
    """Every claim this run's results can state, in reading order (an untestable one is
    there, inconclusive, with its reason)."""
    return _run(CLAIMS, inputs)


def checks(inputs: ClaimInputs) -> list[Check]:
    """Every check this run's results can make, in reading order."""
    return _run(CHECKS, inputs)
