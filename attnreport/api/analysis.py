"""``analyze`` and ``verify`` on a model object the caller holds (transformers, torch).

The model is taken where it is (CPU, one GPU, spread by ``device_map``) and in its dtype,
and goes through what ``attnreport analyze`` runs on a model it loads: the self-check at
load (``session.held_session``), then the one pipeline (``build.study_files``:
``run_corpus``). For the time of the call the model runs in evaluation mode with eager
attention, as ``load_model`` loads every model; both are put back afterwards, as they
were. A refusal is an ``AttnReportError`` whose text is the one line the command line
prints, raised before anything is written.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from attnreport.api.settings import analysis_settings
from attnreport.api.study import Study

if TYPE_CHECKING:
    from torch import nn

    from attnreport.session import Session
    from attnreport.verification import Check


def analyze(
    model: Any,
    tokenizer: Any,
    sentences: Sequence[str] | None = None,
    *,
    name: str | None = None,
    progress: bool = True,
    **settings: Any,
) -> Study:
    """Run the study on ``model`` (a transformers causal LM object, e.g. from
    ``AutoModelForCausalLM.from_pretrained``) and return its results, in memory.

    ``tokenizer``: the model's own. ``sentences``: the texts, one sentence each (None:
    the built-in set); blanks are skipped and repeats dropped, as in a sentence file.
    ``name``: what the report calls the model (default: the folder or hub id it was
    loaded from). ``progress``: draw the stages as tqdm bars (a widget in Jupyter).
    ``settings``: the settings of ``attnreport.toml`` that change the analysis (``bos``,
    ``map_tokens``, ``intervene_layer``, ``view_head``...: ``api.settings.ANALYSIS_KEYS``),
    checked as the file's are.

    The model is analysed as it is (not saved, not copied): its self-check must pass, as
    at ``attnreport analyze``'s load. Raises ``AttnReportError`` (``str(err)``: the one
    line the command line prints) for a model that is refused, a tokenizer that does not
    match it, no sentences, or a setting that is unknown or bad; nothing is written."""
    from attnreport.api.progress import Bars
    from attnreport.build import study_files

    checked = analysis_settings(settings)
    texts = _texts(sentences)
    with analysable(model), Bars(progress) as bars:
        bars("load", 0, 1)  # the self-check, as at the command's load
        session = _session(model, tokenizer, texts, name, checked)
        _, files = study_files(checked, bars, session=session)
    return Study(files)


def verify(
    model: Any, tokenizer: Any, sentences: Sequence[str] | None = None, **settings: Any
) -> list[Check]:
    """The checks of ``attnreport verify`` on ``model`` over ``sentences`` (None: the
    built-in set), as values: per check its ``name``, ``max_error`` (the largest error
    over layers, heads and sentences, in the compared quantity's units), ``tolerance``
    (derived from the model's dtype and the magnitudes compared; ``rule`` spells it
    out) and ``passed``. ``settings``: ``bos`` and ``truncate``, as for ``analyze``.
    Raises ``AttnReportError`` as ``analyze`` does (a model that fails the self-check at
    load is refused, as the command is)."""
    from attnreport.verification import verify_sentences

    checked = analysis_settings(settings, "verify()")
    texts = _texts(sentences)
    with analysable(model):
        session = _session(model, tokenizer, texts, None, checked)
        return verify_sentences(session.model, session.specs, session.token_tensors())


def _texts(sentences: Sequence[str] | None) -> list[str]:
    from attnreport.sentences import listed_sentences, read_sentences

    return read_sentences(None) if sentences is None else listed_sentences(sentences)


def _session(
    model: Any, tokenizer: Any, texts: list[str], name: str | None, settings: Any
) -> Session:
    from attnreport.session import held_session

    return held_session(
        model, tokenizer, texts, name, settings.truncate, settings.bos, settings.chat_template
    )


@contextmanager
def analysable(model: nn.Module) -> Iterator[None]:
    """``model`` in evaluation mode with eager attention inside the context (how
    ``load_model`` loads every model: dropout off, the model's own attention probabilities
    available to the self-check); the mode of every module and the attention
    implementation are put back on exit. A non-module passes through (``held_model``
    refuses it)."""
    from torch import nn

    from attnreport.interface import implementation

    if not isinstance(model, nn.Module) or not hasattr(model, "config"):
        yield
        return
    modes = [(module, module.training) for module in model.modules()]
    model.eval()
    try:
        with implementation(model, "eager"):
            yield
    finally:
        for module, training in modes:
            module.training = training
