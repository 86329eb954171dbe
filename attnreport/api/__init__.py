"""The Python API: study a model already in memory, see any figure inline, publish.

The public names are ``attnreport``'s own (``attnreport.__all__``: ``analyze``,
``verify``, ``load``, ``render``, ``Study``, ``AttnReportError``, ``Check``); this package
holds them, one concern a module:

- ``analysis``: ``analyze`` and ``verify`` on a model object (torch);
- ``study``: ``Study`` (the results of one study: ``save``, ``table``, ``figure``) and
  ``load``;
- ``tables`` and ``figures``: a results table as a pandas DataFrame, a figure as an
  Altair chart;
- ``publishing``: ``render``, the site of one study or several;
- ``settings``: which ``config.Settings`` fields each call takes, checked as
  ``make_settings`` checks a settings file;
- ``progress``: the stages as tqdm bars (a widget in Jupyter).

It is the CLI's pipeline called from Python, not a second one: ``analyze`` runs
``build.study_files`` (``run_corpus``, as ``attnreport analyze`` does) on a session made
by ``session.held_session`` (the same self-check as ``load_verified``), and ``render``
draws saved results with ``publish_several.render_folders``, as ``attnreport render``
does. Loading, tables, figures and rendering import no torch.
"""
