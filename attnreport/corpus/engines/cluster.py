"""The Ray engine: sentences run as tasks on actors that each load the model once.

The driver (this process) keeps a queue of sentences and at most ``IN_FLIGHT`` tasks
per actor, and yields each ``SentenceOutcome`` as it arrives. Per sentence it sends the
``Sentence`` (index, text, token ids, token texts: a few hundred bytes) and receives the
sentence's results file (gzip-compressed by the actor) and the partial sums. Each actor loads the model itself,
from the same ``--model`` value (a path every node can read, a hub id in each node's
cache, or the embedded default shipped in the package), and the driver checks that
every actor's weights fingerprint equals its own before any work.

A worker process that dies is restarted by Ray (``max_restarts``) and its tasks are
retried (``max_task_retries``); should an actor stay dead, the driver resubmits its
sentences to another one. The driver counts each sentence once whatever happens.

Progress within sentences: while it waits, the driver asks every actor every ``POLL_S``
seconds how many layers of its current sentence are done (a method in a concurrency group
of its own, so it answers while ``analyze`` runs; ``analyze`` stays one at a time) and
reports the sums over the sentences in flight to ``EngineContext.on_layer``.
"""

from __future__ import annotations

import logging
import os
from collections import deque
from collections.abc import Iterator, Sequence
from typing import Any

from attnreport.corpus.engines import EngineContext
from attnreport.corpus.work import SentenceOutcome, analyze_one
from attnreport.errors import AttnReportError
from attnreport.jsontypes import Options
from attnreport.sentences import Sentence

log = logging.getLogger(__name__)

INSTALL_HINT = "--engine ray needs Ray, which is not installed: pip install 'attnreport[ray]'"
IN_FLIGHT = 2  # tasks queued per actor: one running, one ready, so no actor waits
RESTARTS = 3
ATTEMPTS = 3  # resubmissions by the driver after Ray's own retries are exhausted
POLL_S = 0.5  # seconds between the driver's questions about layers done (with on_layer)
ANSWER_S = 5.0  # how long the driver waits for those answers before going on without
PROGRESS = "progress"  # the actors' concurrency group answering them


class SentenceWorker:
    """A Ray actor: one model, loaded once, analysing one sentence per call."""

    def __init__(self, model: str, dtype: str, device: str, settings: Any) -> None:
        import transformers

        from attnreport.session import Session, load_verified

        transformers.utils.logging.set_verbosity_error()
        transformers.utils.logging.disable_progress_bar()
        self.session = Session(*load_verified(model, dtype, device), [])
        self.settings = settings
        self.layers = (0, 0)  # (done, total) of the sentence being analysed

    def fingerprint(self) -> str:
        return self.session.loaded.fingerprint

    def pid(self) -> int:
        return os.getpid()

    def analyze(self, sentence: Sentence, keep: bool = True) -> SentenceOutcome:
        self.layers = (0, len(self.session.specs))

        def on_layer(done: int, total: int) -> None:
            self.layers = (done, total)

        return analyze_one(self.session, sentence, self.settings, on_layer, keep)

    def layers_done(self) -> tuple[int, int]:
        """(layers done, layers) of the current sentence; called in ``PROGRESS``."""
        return self.layers


def _import_ray() -> Any:
    try:
        import ray
    except ImportError as err:
        raise AttnReportError(INSTALL_HINT) from err
    return ray


class RayEngine:
    def __init__(self, context: EngineContext) -> None:
        self.ray = ray = _import_ray()
        self.started = not ray.is_initialized()
        if self.started:
            ray.init(
                address=context.ray_address,
                num_cpus=None if context.ray_address else context.workers,
                include_dashboard=False,
                log_to_driver=False,
                configure_logging=False,
            )
        self.on_layer = context.on_layer
        self.context = context
        try:
            self.actors = self._start_actors(context)
        except BaseException:
            self.close()
            raise

    def _start_actors(self, context: EngineContext) -> list[Any]:
        resources = self.ray.cluster_resources()
        gpus = resources.get("GPU", 0) if context.device != "cpu" else 0
        count = context.workers or int(gpus or resources.get("CPU", 1)) or 1
        device = "cuda" if gpus else "cpu"
        options: Options = {"num_cpus": 1, "max_restarts": RESTARTS}
        options["concurrency_groups"] = {PROGRESS: 1}  # the default group runs one at a time
        options["max_task_retries"] = RESTARTS
        if gpus:
            options["num_gpus"] = min(1.0, gpus / count)
        remote = self.ray.remote(**options)(SentenceWorker)
        dtype, settings = context.dtype, context.settings
        actors = [remote.remote(context.model, dtype, device, settings) for _ in range(count)]
        expected = context.session.loaded.fingerprint
        for found in self.ray.get([a.fingerprint.remote() for a in actors]):
            if found != expected:
                raise AttnReportError(
                    f"a Ray worker loaded other weights ({found[:19]}) than the driver ({expected[:19]}); give every node the same model"
                )
        return actors

    def worker_pids(self) -> list[int]:
        return list(self.ray.get([a.pid.remote() for a in self.actors]))

    def analyze(self, sentences: Sequence[Sentence]) -> Iterator[SentenceOutcome]:
        """Outcomes in the order they finish; each sentence yielded exactly once."""
        queue = deque(sentences)
        attempts: dict[int, int] = {}
        running: dict[Any, tuple[int, Sentence]] = {}  # object ref -> (actor slot, sentence)

        def submit(slot: int) -> None:
            if queue:
                sentence = queue.popleft()
                keep = self.context.keeps(sentence)
                running[self.actors[slot].analyze.remote(sentence, keep)] = (slot, sentence)

        for slot in range(len(self.actors)):
            for _ in range(IN_FLIGHT):
                submit(slot)
        while running:
            timeout = None if self.on_layer is None else POLL_S
            ready, _ = self.ray.wait(list(running), num_returns=1, timeout=timeout)
            if not ready:
                self._report_layers({slot for slot, _ in running.values()})
                continue
            slot, sentence = running.pop(ready[0])
            try:
                outcome = self.ray.get(ready[0])
            except self.ray.exceptions.RayActorError as err:
                attempts[sentence.index] = attempts.get(sentence.index, 0) + 1
                if attempts[sentence.index] > ATTEMPTS:
                    raise AttnReportError(
                        f"sentence {sentence.index} failed on {ATTEMPTS} Ray workers: {err}".splitlines()[
                            0
                        ]
                    ) from err
                log.warning("Ray worker lost on sentence %d; retrying it", sentence.index)
                queue.appendleft(sentence)
                submit((slot + 1) % len(self.actors))
                continue
            submit(slot)
            yield outcome

    def _report_layers(self, busy: set[int]) -> None:
        """``on_layer`` with the layers done and in all of the busy actors' sentences;
        nothing when an actor cannot answer (``analyze`` then hears why)."""
        asks = [
            self.actors[slot].layers_done.options(concurrency_group=PROGRESS).remote()
            for slot in sorted(busy)
        ]
        try:
            answers = self.ray.get(asks, timeout=ANSWER_S)
        except (self.ray.exceptions.RayError, TimeoutError):
            return
        total = sum(t for _, t in answers)
        if total and self.on_layer is not None:
            self.on_layer(sum(d for d, _ in answers), total)

    def close(self) -> None:
        for actor in getattr(self, "actors", []):
            self.ray.kill(actor)
        if self.started and self.ray.is_initialized():
            self.ray.shutdown()


def check_available() -> None:
    _import_ray()


def open_engine(context: EngineContext) -> RayEngine:
    return RayEngine(context)
