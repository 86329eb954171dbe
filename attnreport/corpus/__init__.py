"""Corpus runs: thousands of sentences, resumable, on one machine or a Ray cluster.

``run_corpus(config, CorpusOptions(engine=..., resume=...))`` is what ``attnreport
analyze`` calls; see ``run`` (the driver), ``engines`` (local, ray), ``partial``
(exact set-wide merging), ``store`` (the one writer), ``fingerprint`` (resume checks)
and ``pages`` (which sentences get a page).
"""

from attnreport.corpus.run import CorpusOptions, CorpusSummary, run_corpus

__all__ = ["CorpusOptions", "CorpusSummary", "run_corpus"]
