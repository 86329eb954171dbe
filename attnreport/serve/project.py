"""One ``serve --watch`` session's project: its settings, a model kept loaded, the
results folder and the site, and ``Project.build``, which brings the site up to date
with the files on disk doing only the work a save asks for.

A build reads the settings file again (a bad value fails here, before any work), opens
the session (the model is loaded again only when ``model``, ``dtype``, ``device`` or
``device_map`` changed; the sentences are read and tokenised every time, which takes
milliseconds), brings the results folder up to date (``serve.analysis``: only changed
sentences, or nothing after a template or render-setting edit), then renders the site
from the folder as ``attnreport render`` does (``publish.render_folder``): the figure
cache rebuilds only the figures whose results files changed, and the site is swapped in
whole, so a failed build leaves the last good site where it was.

With ``defer_grids`` a build that must run the intervention grids again leaves them for
``Project.finish_grids``: its site is drawn without them, a note in each grid figure's
place saying it is being updated (``SiteOptions.updating``), and drawn again when they
have run.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from attnreport.build import Progress, site_options
from attnreport.config import Settings, SettingValues, load_settings
from attnreport.errors import AttnReportError
from attnreport.output import check_output, input_paths

if TYPE_CHECKING:  # the model's modules load with the first build, not with this one
    from attnreport.pass_count import PassProgress
    from attnreport.site.context import SiteOptions

PAGE = re.compile(r"s(\d{3,})-.*\.html")  # a sentence page: its index, then its slug


@dataclass(frozen=True)
class BuildReport:
    """What one build did: ``analysed`` sentence indices (None: every sentence of a
    fresh run), whether the model was loaded, the ``moved`` pages (old file name -> new,
    when a sentence's text changed its slug) and the seconds of each part."""

    analysis: str  # the plan's kind: none, resume, sentences, all
    analysed: tuple[int, ...] | None
    loaded: bool
    moved: dict[str, str]
    pages: int
    seconds: dict[str, float]
    grids_left: bool = False  # the site went up without the grids: ``finish_grids`` runs them


@dataclass(frozen=True)
class GridsLeft:
    """What the last build left the grids to: the settings and session it analysed, and
    the options its site was drawn with (``updating`` the grids)."""

    settings: Settings
    session: Any
    options: SiteOptions


def _load_key(settings: Settings) -> tuple[Any, ...]:
    return (settings.model, settings.dtype, settings.device, settings.device_map)


def sentence_pages(site: Path) -> dict[int, str]:
    """Sentence index -> page file name of the site in ``site`` (none when absent)."""
    found = {}
    for path in site.glob("s*.html") if site.is_dir() else ():
        match = PAGE.fullmatch(path.name)
        if match:
            found[int(match.group(1))] = path.name
    return found


class Project:
    """The settings file (``config``, None: the defaults), options given on the command
    line (``given``), the results folder (``results``, None: ``OUT-results`` beside the
    site) and the model loaded for them."""

    def __init__(
        self, config: Path | None, given: SettingValues, results: Path | None = None
    ) -> None:
        self.config, self.given, self.results_option = config, dict(given), results
        self.loaded: Any = None  # the LoadedModel kept between builds
        self.key: tuple[Any, ...] | None = None
        self.images_later: SiteOptions | None = None  # the options whose images a build deferred
        self.grids_left: GridsLeft | None = None  # the grids the last build left for later
        self.settings = self.read_settings()

    def read_settings(self) -> Settings:
        """The settings as the file says now (``AttnReportError`` for a bad value; several
        models are refused: the loop keeps one model loaded)."""
        settings = load_settings(self.config, self.given)
        if len(settings.model_names()) > 1:
            raise AttnReportError(
                "serve --watch follows one model; the settings list several (models): "
                "build the comparison with attnreport build, or set model alone"
            )
        return settings

    @property
    def site(self) -> Path:
        return Path(self.settings.out)

    @property
    def results(self) -> Path:
        """The results folder: ``--results``, else ``OUT-results`` beside the site."""
        if self.results_option is not None:
            return self.results_option
        site = self.site.expanduser().absolute()
        return site.with_name(site.name + "-results")

    def watched(self) -> dict[str, list[Path]]:
        """The files a build reads, by kind: config, sentences, templates, results (its
        manifest: a run, ours or an ``analyze`` of the same folder, writes it last)."""
        from attnreport.site.render import templates_root

        sentences = [Path(self.settings.sentences)] if self.settings.sentences else []
        return {
            "config": [self.config] if self.config is not None else [],
            "sentences": sentences,
            "templates": [templates_root()],
            "results": [self.results / "manifest.json"],  # written last, once complete
        }

    def session(self, settings: Settings, progress: Progress) -> tuple[Any, bool]:
        """A session of ``settings``' sentences on the kept model (loaded again only when
        the model, dtype, device or device map changed); and whether it was loaded."""
        from attnreport.sentences import read_sentences, tokenize_sentences
        from attnreport.session import Session, context_length

        texts = read_sentences(settings.sentences)  # a bad file fails before a load
        load = self.loaded is None or self.key != _load_key(settings)
        if load:
            from attnreport.pass_memo import keep_passes
            from attnreport.session import load_verified

            progress("model", 0, 1)
            self.loaded = None  # free the old model first
            self.loaded, self.specs = load_verified(
                settings.model, settings.dtype, settings.device, settings.device_map
            )
            self.key = _load_key(settings)
            keep_passes(self.loaded.model)  # saves rerun the set's extra passes on new inputs only
        context = context_length(self.loaded)
        tokenizer = self.loaded.tokenizer
        sentences = tokenize_sentences(
            texts, tokenizer, context, settings.truncate, settings.bos, settings.chat_template
        )
        return Session(self.loaded, self.specs, sentences, settings.bos), load

    def build(
        self, progress: Progress, defer_images: bool = False, defer_grids: bool = False
    ) -> BuildReport:
        """Read the files again and bring the results and the site up to date with them.

        With ``defer_images``, the site is first written without its static images (a
        page with scripts shows none of them: they are the ``<noscript>`` copy and the
        download links), and ``draw_images`` writes it again with them. With
        ``defer_grids``, intervention grids that must run again are left to
        ``finish_grids`` (``BuildReport.grids_left``) and the site is drawn without them.
        Raises ``AttnReportError`` (a bad setting or sentence file, a refused folder); the
        site on disk is then the last good one."""
        from attnreport.serve.analysis import update_results
        from attnreport.serve.grids import finish_grids, grids_missing
        from attnreport.site.context import GRIDS

        seconds: dict[str, float] = {}
        start = time.perf_counter()
        self.images_later = self.grids_left = None
        settings = self.read_settings()
        if self.settings.out != settings.out:
            raise AttnReportError(
                f"out changed from {self.settings.out} to {settings.out}; restart attnreport serve"
            )
        check_output(self.site, [*input_paths(settings), self.results], False)
        session, loaded = self.session(settings, progress)
        start = _lap(seconds, "load" if loaded else "read", start)
        plan = update_results(settings, session, self.results, progress, defer_grids)
        if not defer_grids:  # a folder an earlier save left without them
            finish_grids(settings, session, self.results, _passes(progress))
        start = _lap(seconds, "analyse", start)
        left = grids_missing(self.results)
        before = sentence_pages(self.site)
        options = site_options(settings)
        # Only new figures have images to draw: a template or page-setting save finds
        # every image in the image cache, and a second render would cost more.
        later = defer_images and options.images and plan.kind != "none"
        self.images_later = options if later else None
        if self.images_later is not None:
            options = replace(options, images=False, png=False)
        if left:  # drawn without them, a note in their place
            options = replace(options, updating=(GRIDS,))
        summary = self._render(options, progress)
        _lap(seconds, "render", start)
        self.grids_left = GridsLeft(settings, session, options) if left else None
        self.settings = settings
        after = sentence_pages(self.site)
        moved = {before[i]: after[i] for i in before.keys() & after.keys() if before[i] != after[i]}
        analysed = None if plan.kind == "all" else plan.changed
        return BuildReport(plan.kind, analysed, loaded, moved, summary.pages, seconds, left)

    def finish_grids(self, progress: Progress) -> int:
        """Run the grids the last build left (``grids_left``) and draw the site again with
        them; the forward passes they took (0: none were left). ``progress`` hears of
        each pass and may raise to stop them, leaving the site as it was."""
        from attnreport.serve.grids import finish_grids

        left = self.grids_left
        if left is None:
            return 0
        progress("interventions", 0, 1)
        passes = finish_grids(left.settings, left.session, self.results, _passes(progress))
        self.grids_left = None
        self._render(replace(left.options, updating=()), progress)
        return passes

    def _render(self, options: SiteOptions, progress: Progress) -> Any:
        """The site drawn from the results folder with ``options`` (``render_folder``)."""
        from attnreport.publish import render_folder

        progress("site", 0, 1)
        return render_folder(self.results, self.site, options)

    def draw_images(self) -> bool:
        """Write the site again with the static images the last build deferred (their
        figures come from the figure cache); False when none were deferred, or the
        grids are still to run (the site drawn then would lack them)."""
        if self.images_later is None or self.grids_left is not None:
            return False
        options, self.images_later = self.images_later, None
        self._render(options, lambda _stage, _done, _total: None)
        return True


def _passes(progress: Progress) -> PassProgress:
    """The grids' forward passes reported as ``interventions:passes``."""
    from attnreport.corpus.run import PASSES

    return lambda done, total: progress(PASSES, done, total)


def _lap(seconds: dict[str, float], part: str, since: float) -> float:
    now = time.perf_counter()
    seconds[part] = now - since
    return now
