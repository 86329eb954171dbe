"""The report's date, reproducibly: never the clock at render time.

A report is dated by its analysis: ``analyze`` records the day it ran in the manifest
(``Manifest.analysed``; the day of ``SOURCE_DATE_EPOCH`` when that is set, so a pinned
build records a pinned day), and every render of those results shows that day. The
precedence of what a page shows (``report_date``): the ``date`` setting, else the
results' analysis date, else ``SOURCE_DATE_EPOCH`` (results written before the manifest
had a date), else no date. A report is never dated before the analysis it reports: a
``date`` setting earlier than the analysis day is refused (``check_report_date``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from datetime import UTC, date, datetime

from attnreport.errors import AttnReportError


def date_from_env(environ: Mapping[str, str] = os.environ) -> str | None:
    """The ISO date of ``SOURCE_DATE_EPOCH`` (UTC), or None when it is not set."""
    epoch = environ.get("SOURCE_DATE_EPOCH", "").strip()
    if not epoch:
        return None
    try:
        return datetime.fromtimestamp(int(epoch), tz=UTC).date().isoformat()
    except (ValueError, OverflowError, OSError) as err:
        raise AttnReportError(
            f"SOURCE_DATE_EPOCH={epoch!r} is not a whole number of seconds since 1970"
        ) from err


def analysis_date(environ: Mapping[str, str] = os.environ, today: date | None = None) -> str:
    """The ISO date an analysis records: ``SOURCE_DATE_EPOCH``'s day when it is set, else
    ``today`` (default: the UTC clock's day). A day, not a time, so results written the
    same day are byte-identical."""
    pinned = date_from_env(environ)
    if pinned is not None:
        return pinned
    return (today or datetime.now(tz=UTC).date()).isoformat()


def check_report_date(setting: str | None, analysed: str | None) -> None:
    """Refuse, in one line, a ``date`` setting before the day of the analysis (ISO days
    compare as strings)."""
    if setting is not None and analysed is not None and setting < analysed:
        raise AttnReportError(
            f"the report's date {setting} is before its analysis ({analysed}): set 'date' "
            "to that day or later, or leave it out to date the report by its analysis"
        )


def report_date(
    setting: str | None, analysed: str | None, environ: Mapping[str, str] = os.environ
) -> str | None:
    """The date a report shows: the ``date`` setting, else the results' analysis date,
    else ``SOURCE_DATE_EPOCH``'s day, else None. AttnReportError when the setting is
    before the analysis (``check_report_date``)."""
    check_report_date(setting, analysed)
    return setting or analysed or date_from_env(environ)
