"""The figure registry: one declaration per figure, in the order the pages number them.

Each ``FigureEntry`` says which page the figure is on, which part of that page, the
results file and tables it reads (its "data" link points at that file in the site's
``results/``), and how to build it. Pages, sections, data links and footnotes are
decided from these entries, never from words in figure keys or from chart columns.
An entry also carries what the page says about its figure besides the chart: its alt
text (a function of the data it draws, ``site.words.alt_text``), the caption sentences that
define the model features it shows (``notes``), and whether its layer axis shades the
windowed layers (``shaded``); ``place`` hands the builder those caption sentences
(``Inputs.notes``) to append. Adding a figure from existing tables: its builder, one
entry here, its test.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, replace
from typing import Any

from attnreport.charts.figure import Encoded, Figure
from attnreport.charts.figures.links import Pages
from attnreport.charts.spec.notes import BREAKDOWN_NOTES, MAP_NOTES, caption_notes
from attnreport.results import Manifest, Results, SentenceResults
from attnreport.site.words import alt_evidence
from attnreport.site.words import alt_text as alt
from attnreport.site.words.alt_text import AltData
from attnreport.vocabulary import FOCUS_STATISTICS


def _builder(module: str, name: str) -> Callable[..., Figure]:
    """``attnreport.charts.MODULE.NAME``, imported on its first call: the builders (and
    Altair) load only when a figure is built, not when a cached one is read."""

    def call(*args: Any, **kwargs: Any) -> Figure:
        return getattr(importlib.import_module(f"attnreport.charts.figures.{module}"), name)(
            *args, **kwargs
        )

    return call


attention_map_figure = _builder("attention", "attention_map_figure")
breakdown_figure = _builder("breakdown", "breakdown_figure")
bias_position_figure = _builder("breakdown", "bias_position_figure")
focus_figure = _builder("focus", "focus_figure")
pooled_focus_figure = _builder("focus", "pooled_focus_figure")
histogram_figure = _builder("impact", "histogram_figure")
scatter_figure = _builder("impact_scatter", "scatter_figure")
block_impact_figure = _builder("block_impact", "block_impact_figure")
pooled_impact_figure = _builder("block_impact", "pooled_impact_figure")
scaling_figure = _builder("interventions", "scaling_figure")
mean_figure = _builder("mean_grids", "mean_figure")
mean_before_rotation_figure = _builder("mean_grids", "mean_before_rotation_figure")
sink_rate_figure = _builder("sink_rate", "sink_rate_figure")
atlas_figure = _builder("head_roles", "atlas_figure")
roles_scatter_figure = _builder("head_roles", "scatter_figure")
split_update_figure = _builder("split_updates", "split_update_figure")
first_token_bos_figure = _builder("first_token_bos", "first_token_bos_figure")
value_norm_figure = _builder("value_norms", "value_norm_figure")
massive_figure = _builder("massive", "massive_figure")


@dataclass(frozen=True)
class Inputs:
    """What a builder may read: the results and, on a sentence page, its sentence.

    ``show_interventions``: the page shows the intervention grids (on the page of the
    sentence the scaling grid was run on). ``notes``: the caption sentences of the
    figure's entry (``FigureEntry.caption_notes``), which its builder appends. ``pages``:
    on the index, the sentences that have a page and their files, which its figures link
    each head to (``figures.links``).
    """

    results: Results
    page_sentence: SentenceResults | None = None  # None on the index
    show_interventions: bool = False
    notes: str = ""  # what the figure's entry adds to its caption (``place`` sets it)
    pages: Pages = ()

    @property
    def sentence(self) -> SentenceResults:
        if self.page_sentence is None:
            raise ValueError("a sentence figure was asked for on the index page")
        return self.page_sentence


SORTED_LINES = "sorted-head lines by layer"  # the focus figures' kind


@dataclass(frozen=True)
class FigureEntry:
    key: str
    page: str  # "sentence" or "index"
    part: str  # one of vocabulary.PART_ANCHORS on sentence pages, "set" on the index
    reads: tuple[str, ...]  # "FILE:TABLE"; FILE is sentence, set or interventions
    build: Callable[[Inputs], Figure]
    when: Callable[[Inputs], bool] = lambda _inputs: True
    sorted_lines: bool = False  # draws sorted-head lines (line k = k-th strongest head)
    alt: Callable[[AltData], str] | None = None  # its alt text from its data (None: none)
    # (feature in ``manifest.model.features``, the caption sentence defining what that
    # feature changes in this figure): one table, so a definition reads the same everywhere
    notes: tuple[tuple[str, str], ...] = ()
    shaded: bool = False  # its layer axis shades the windowed layers (``window_bands``)
    # figures drawn the same way share a kind: a caption may send its reader to an earlier
    # figure of its kind ("read it as Figure 4"), never to another kind (default: its key)
    family: str = ""
    # While a results file it reads is being computed again (``SiteOptions.updating``)
    # the figure cannot be built: a note with its ``title`` stands where ``while_updating``
    # says it will go (without its data; None: nowhere).
    title: str = ""
    while_updating: Callable[[Inputs], bool] | None = None

    @property
    def kind(self) -> str:
        return self.family or self.key

    def caption_notes(self, manifest: Manifest) -> str:
        """The caption sentences for the features ``manifest``'s model has (``notes``),
        then the windowed layers' sentence ("(shaded)" when ``shaded``)."""
        return caption_notes(manifest, self.notes, self.shaded)

    @property
    def source(self) -> str:
        """The results file the figure draws: "sentence", "set" or "interventions"."""
        return self.reads[0].split(":")[0]

    @property
    def files(self) -> frozenset[str]:
        """Every results file the figure reads: "sentence", "set", "interventions"."""
        return frozenset(read.split(":")[0] for read in self.reads)


def _has_map(inputs: Inputs) -> bool:
    return inputs.sentence.attention is not None  # None past ``map_tokens`` tokens


def _iv(build: Callable) -> Callable[[Inputs], Figure]:
    def wrapped(i: Inputs) -> Figure:
        r = i.results
        return build(r.interventions, i.sentence, r.manifest, r.sentences)

    return wrapped


def _focus(statistic: str) -> Callable[[Inputs], Figure]:
    return lambda i: focus_figure(i.sentence, statistic, i.results.manifest, i.notes)


def _pooled(statistic: str) -> Callable[[Inputs], Figure]:
    return lambda i: pooled_focus_figure(
        i.results.set,
        statistic,
        len(i.results.sentences) or len(i.results.manifest.sentences),
        i.results.manifest,
        i.notes,
        i.pages,
    )


def _set_focus(key: str, statistic: str) -> FigureEntry:
    """An index figure of one pooled focus statistic (sorted-head lines)."""
    reads = ("set:focus_sorted", "set:focus_pooled")
    return FigureEntry(
        f"set-{key}", "index", "set", reads, _pooled(statistic), sorted_lines=True,
        alt=alt.set_focus(statistic), shaded=True, family=SORTED_LINES,
    )  # fmt: skip


def _has_roles(inputs: Inputs) -> bool:
    """Head-role figures need results of schema version 5 or later."""
    return inputs.results.set.head_roles is not None


def _splits_updates(inputs: Inputs) -> bool:
    """The update sizes split by top key: results of schema 9."""
    first = inputs.results.set.focus_by_sentence.arrays().get("first_update")
    return first is not None and bool((first >= 0).any())


def _has_contrast(inputs: Inputs) -> bool:
    """The other BOS capture with its first-token probabilities: results of schema 9."""
    table = inputs.results.set.bos_contrast
    return table is not None and len(table.sentence) > 0 and bool((table.first_prob >= 0).all())


def _has_value_norms(inputs: Inputs) -> bool:
    table = inputs.results.set.value_norms
    return table is not None and len(table.layer) > 0


def _has_massive(inputs: Inputs) -> bool:
    return inputs.results.set.massive_activations is not None


def _set(build: Callable[..., Figure]) -> Callable[[Inputs], Figure]:
    """A builder of (set results, manifest)."""
    return lambda i: build(i.results.set, i.results.manifest)


def _shows_grids(inputs: Inputs) -> bool:
    """Intervention grids go on the page of the sentence the scaling grid ran on."""
    return inputs.show_interventions and inputs.results.interventions is not None


def _shows_before_rotation(inputs: Inputs) -> bool:
    """The grid of the mean taken before the rotation: rotary models only (and results of
    schema version 5 or later)."""
    iv = inputs.results.interventions
    return _shows_grids(inputs) and iv is not None and bool(iv.mean.before_rotation)


def _grids_page(inputs: Inputs) -> bool:
    """The page the grids go on, while they are being computed (``page_inputs``)."""
    return inputs.show_interventions


def _rotary_grids_page(inputs: Inputs) -> bool:
    """The grids' page of a model that rotates q and k in some attention layer (its layer
    facts say, else its positional scheme): where the grid of the mean before the rotation
    will be, unless the grids' layer (not known until they run) is one without a rotation."""
    model = inputs.results.manifest.model
    rotary = any(f.attention and f.positions in ("rope", "partial_rope") for f in model.layers)
    return _grids_page(inputs) and (rotary or not model.layers and model.positional == "rope")


_IMPACT = ("sentence:head_impact", "sentence:top")

FIGURES: tuple[FigureEntry, ...] = (
    FigureEntry("attention-map", "sentence", "focus", ("sentence:attention",),
                lambda i: attention_map_figure(i.sentence, manifest=i.results.manifest, notes=i.notes),
                when=_has_map, alt=alt.attention_map, notes=MAP_NOTES),
    FigureEntry("attention-breakdown", "sentence", "focus", ("sentence:breakdown",),
                lambda i: breakdown_figure(i.sentence, i.results.manifest, notes=i.notes),
                alt=alt.breakdown, notes=BREAKDOWN_NOTES),
    FigureEntry("bias-vs-position", "sentence", "focus", ("sentence:breakdown",),
                lambda i: bias_position_figure(i.sentence, i.results.manifest),
                alt=alt.bias_position),
    *(
        FigureEntry(key, "sentence", "layers", ("sentence:focus_sorted",), _focus(stat),
                    sorted_lines=True, alt=alt.sentence_focus(stat), shaded=True,
                    family=SORTED_LINES)
        for key, stat in zip(("self-focus", "first-focus", "concentration"), FOCUS_STATISTICS,
                             strict=True)
    ),
    FigureEntry("update-magnitude", "sentence", "impact", _IMPACT,
                lambda i: histogram_figure(i.sentence, "magnitude", manifest=i.results.manifest), alt=alt.update_magnitude,
                family="update histograms"),
    FigureEntry("update-orientation", "sentence", "impact", _IMPACT,
                lambda i: histogram_figure(i.sentence, "orientation", manifest=i.results.manifest),
                alt=alt.update_orientation, family="update histograms"),
    FigureEntry("orientation-vs-magnitude", "sentence", "impact", _IMPACT,
                lambda i: scatter_figure(i.sentence), alt=alt.orientation_magnitude),
    FigureEntry("impact-by-position", "sentence", "impact", ("sentence:block_impact",),
                lambda i: block_impact_figure(i.sentence), alt=alt.impact_by_position),
    FigureEntry("scaling-grid", "sentence", "interventions",
                ("interventions:scaling", "sentence:focus"),
                _iv(scaling_figure), when=_shows_grids, alt=alt.scaling_grid,
                family="intervention grid", title="Scaling Q, K and V",
                while_updating=_grids_page),
    FigureEntry("mean-grid", "sentence", "interventions", ("interventions:mean", "sentence:focus"),
                _iv(mean_figure), when=_shows_grids, alt=alt.mean_grid, family="intervention grid",
                title="Replacing Q, K and V by their mean", while_updating=_grids_page),
    FigureEntry("mean-grid-before-rotation", "sentence", "interventions",
                ("interventions:mean", "sentence:focus"), _iv(mean_before_rotation_figure),
                when=_shows_before_rotation, alt=alt.mean_grid_before_rotation,
                family="intervention grid",
                title="Replacing Q and K by their mean before the rotation",
                while_updating=_rotary_grids_page),
    _set_focus("self-focus", "self_focus"),
    _set_focus("first-focus", "first_focus"),
    FigureEntry("set-sink-rate", "index", "set", ("set:focus_by_sentence",),
                lambda i: sink_rate_figure(i.results.set, i.results.manifest, i.notes, i.pages),
                alt=alt.set_sink_rate, shaded=True),
    _set_focus("concentration", "concentration"),
    FigureEntry("set-head-impact", "index", "set", ("set:impact_pooled",),
                lambda i: pooled_impact_figure(i.results.set, i.results.manifest, i.pages),
                alt=alt.set_head_impact),
    FigureEntry("head-atlas", "index", "set", ("set:head_roles", "set:focus_by_sentence"),
                lambda i: atlas_figure(i.results.set, i.results.manifest, i.pages),
                when=_has_roles),
    FigureEntry("induction-vs-previous", "index", "set", ("set:head_roles", "set:impact_pooled"),
                lambda i: roles_scatter_figure(i.results.set, i.pages), when=_has_roles),
    # the evidence the claims are judged on, and the massive activations
    FigureEntry("split-updates", "index", "set", ("set:focus_by_sentence",),
                _set(split_update_figure), when=_splits_updates, alt=alt_evidence.split_updates),
    FigureEntry("first-token-bos", "index", "set", ("set:bos_contrast", "set:focus_by_sentence"),
                _set(first_token_bos_figure), when=_has_contrast, alt=alt_evidence.first_token_bos),
    FigureEntry("value-norms", "index", "set", ("set:value_norms", "set:focus_pooled"),
                _set(value_norm_figure), when=_has_value_norms, alt=alt_evidence.value_norms),
    FigureEntry("massive-activations", "index", "set", ("set:massive_activations",),
                _set(massive_figure), when=_has_massive, alt=alt_evidence.massive),
)  # fmt: skip


def entry_of(key: str, entries: Sequence[FigureEntry] | None = None) -> FigureEntry | None:
    """The registry entry of figure ``key`` (None for a figure the registry lacks)."""
    return next((e for e in (FIGURES if entries is None else entries) if e.key == key), None)


@dataclass(frozen=True)
class Placed:
    """A built figure with the registry entry that placed it; ``encoded``: its payload and
    data files when they were read from the figure cache (else the page encodes it)."""

    entry: FigureEntry
    figure: Figure
    encoded: Encoded | None = None
    updating: bool = False  # a note in the figure's place (``updating_notes``), no chart


def grids_sentence(results: Results) -> int:
    """The sentence whose page shows the intervention grids: the one the scaling grid
    draws, the settings' ``scaling_sentence`` (which the manifest says while the grids
    are being computed, and the results hold none)."""
    iv = results.interventions
    return iv.scaling.sentence if iv is not None else results.manifest.settings.scaling_sentence


def page_inputs(results: Results, index: int | None, pages: Pages = ()) -> Inputs:
    """Inputs of sentence ``index``'s page, or of the index page when None (``pages``: the
    sentence pages its figures link to)."""
    if index is None:
        return Inputs(results, pages=pages)
    return Inputs(results, results.sentences[index], grids_sentence(results) == index)


def place(entry: FigureEntry, inputs: Inputs) -> Placed:
    """``entry``'s figure built from ``inputs``, with its entry's caption notes."""
    notes = entry.caption_notes(inputs.results.manifest)
    figure = entry.build(replace(inputs, notes=notes))
    if figure.key != entry.key:
        raise ValueError(f"figure {entry.key} was built with key {figure.key}")
    return Placed(entry, figure)


def build_figures(
    inputs: Inputs,
    entries: Sequence[FigureEntry] | None = None,
    make: Callable[[FigureEntry, Inputs], Placed] = place,
) -> list[Placed]:
    """The figures of one page in registry order (entries whose ``when`` holds; all of
    ``FIGURES`` when ``entries`` is None), each made by ``make`` (``place``, or a cache
    that calls it for figures it does not hold)."""
    page = "index" if inputs.page_sentence is None else "sentence"
    entries = FIGURES if entries is None else entries
    return [make(e, inputs) for e in entries if e.page == page and e.when(inputs)]


# What stands in a figure while its results are computed (a save's, or a first build's).
UPDATING = (
    "Being updated: the results this figure draws are being computed from the current "
    "sentences; it shows here when they are done."
)


def updating_notes(
    inputs: Inputs, updating: Collection[str], entries: Sequence[FigureEntry] | None = None
) -> list[Placed]:
    """Notes in place of the figures of this page that read a results file being computed
    again (``updating``: "interventions"), where their entries' ``while_updating`` puts
    them, in registry order."""
    page = "index" if inputs.page_sentence is None else "sentence"
    return [
        Placed(e, Figure(e.key, e.title or e.key, "", {}, {}, note=UPDATING), updating=True)
        for e in (FIGURES if entries is None else entries)
        if e.page == page
        and e.files & set(updating)
        and e.while_updating is not None
        and e.while_updating(inputs)
    ]


def with_notes(made: Sequence[Placed], notes: Sequence[Placed]) -> list[Placed]:
    """``made`` with ``notes`` in registry order, each in place of its figure when that was
    made (a figure whose results are being computed again is not shown)."""
    if not notes:
        return list(made)
    noted = {n.entry.key for n in notes}
    order = {e.key: k for k, e in enumerate(FIGURES)}
    placed = [p for p in made if p.entry.key not in noted] + list(notes)
    return sorted(placed, key=lambda p: order.get(p.entry.key, len(order)))
