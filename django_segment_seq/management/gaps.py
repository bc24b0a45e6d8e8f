"""`manage.py segment_seq gaps`: a field's gap report as lines people read or as JSON for scripts."""

from __future__ import annotations

import textwrap
from typing import Any

from django_segment_seq.audit.gaps import GapReport, Series
from django_segment_seq.audit.ranges import EN_DASH, Span
from django_segment_seq.db.rownames import shown

# Unexplained ranges are listed comma-separated, wrapped at this width.
WIDTH = 100


def as_dict(report: GapReport) -> dict[str, Any]:
    return {
        "field": report.label,
        "voided": report.voided_count,
        "unexplained": report.unexplained_count,
        "unreadable": report.unreadable,
        "unreadable_why": report.key_missing or None,
        "repeated": report.repeated,
        "series": [series_dict(series) for series in report.series],
    }


def series_dict(series: Series) -> dict[str, Any]:
    return {
        "scope": series.scope,
        "scope_shown": shown(series.scope) or None,
        "period": series.period,
        "first": series.first,
        "highest": series.highest,
        "stored": series.stored,
        "repeated": series.repeated,
        "voided_count": series.voided_count,
        "unexplained_count": series.unexplained_count,
        "voided": [{"first": run.span.first, "last": run.span.last, "reason": run.reason} for run in series.voided],
        "unexplained": [{"first": span.first, "last": span.last} for span in series.unexplained],
    }


def lines(report: GapReport) -> list[str]:
    """The report as text: a heading per series, its voided runs with their reasons, its unexplained runs."""
    found = []
    if report.unreadable:
        found.append(
            f"{report.unreadable} stored texts could not be read back (not made by the field's format, or concealed "
            "under a key no longer configured) and are in no series below."
        )
    if report.key_missing:
        found.append(report.key_missing)
    if not report.series:
        return [*found, f"{report.label}: no numbers {'read back' if report.unreadable else 'stored'}."]
    for series in report.series:
        found.append(heading(series))
        width = max((len(str(run.span)) for run in series.voided), default=0)
        found += [f"  voided       {str(run.span).ljust(width)}  {run.reason}" for run in series.voided]
        if series.unexplained:
            wrapped = textwrap.wrap(", ".join(str(span) for span in series.unexplained), WIDTH - 15)
            found += [f"  {'unexplained' if i == 0 else ''}".ljust(15) + line for i, line in enumerate(wrapped)]
    repeated = f", {report.repeated} stored more than once" if report.repeated else ""
    unreadable = f", {report.unreadable} unreadable" if report.unreadable else ""
    found.append(
        f"{report.label}: {report.voided_count} voided, {report.unexplained_count} unexplained{repeated}{unreadable} "
        f"in {len(report.series)} series."
    )
    return found


def heading(series: Series) -> str:
    where = [f"period {series.period}"] if series.period else []
    where += [f"scope {shown(series.scope)}"] if series.scope else []
    span = str(Span(series.first, series.highest)).replace(EN_DASH, f" {EN_DASH} ") if series.stored > 1 else ""
    title = ", ".join(where) or "all numbers"
    title = title[:1].upper() + title[1:]  # str.capitalize() would lower "2026-W47"
    stored = f"{series.stored} stored" + (f" ({series.repeated} repeating a number)" if series.repeated else "")
    if not series.voided and not series.unexplained:
        return f"{title}: {span or series.first}, {stored}; no gaps."
    return f"{title}: {span}, {stored}; {series.voided_count} voided, {series.unexplained_count} unexplained"
