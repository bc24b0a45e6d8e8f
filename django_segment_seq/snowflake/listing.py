"""Worker leases as `manage.py segment_seq leases` prints them: rows of a table, JSON, and a one-line summary."""

from __future__ import annotations

from collections import Counter
from typing import Any

from django_segment_seq.snowflake.leases import LiveLease

HEADER = ("LAYOUT", "WORKER", "HOST", "PID", "STATUS", "EXPIRES", "RENEWED")


def holder(lease: LiveLease) -> tuple[str, int | None]:
    """The holder's host and process id, from the `host:pid` owner label (a host name may hold colons)."""
    host, _, pid = lease.owner.rpartition(":")
    return (host, int(pid)) if pid.isdigit() else (lease.owner, None)


def expires_text(lease: LiveLease) -> str:
    """When the lease runs out by the database's clock: "in 42.1 s", "3.0 s ago", or "-" for one given back."""
    if lease.status == "released":
        return "-"
    if lease.live:
        return f"in {_duration(lease.expires_in)}"
    return f"{_duration(-lease.expires_in)} ago"


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.1f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    if seconds < 172_800:
        return f"{seconds / 3600:.0f} h"
    return f"{seconds / 86400:.0f} days"


def table(leases: list[LiveLease]) -> list[tuple[str, ...]]:
    lines: list[tuple[str, ...]] = [HEADER]
    for lease in leases:
        host, pid = holder(lease)
        renewed = lease.renewed_at.isoformat(timespec="seconds") if lease.renewed_at else "-"
        cells = (lease.layout, lease.worker_id, host or "-", pid if pid is not None else "-", lease.status)
        lines.append((*(str(cell) for cell in cells), expires_text(lease), renewed))
    return lines


def as_dict(lease: LiveLease) -> dict[str, Any]:
    host, pid = holder(lease)
    return {
        "layout": lease.layout,
        "worker_id": lease.worker_id,
        "owner": lease.owner,
        "host": host,
        "pid": pid,
        "status": lease.status,
        "live": lease.live,
        "expires_in": round(lease.expires_in, 3) if lease.status != "released" else None,
        "acquired_at": lease.acquired_at.isoformat() if lease.acquired_at else None,
        "renewed_at": lease.renewed_at.isoformat() if lease.renewed_at else None,
        "expires_at": lease.expires_at.isoformat() if lease.expires_at else None,
    }


def summary(leases: list[LiveLease]) -> str | None:
    """One line for `segment_seq list`: the live leases per layout; None when the table has no rows."""
    if not leases:
        return None
    live = Counter(lease.layout for lease in leases if lease.live)
    per_layout = ", ".join(f"{layout} {count}" for layout, count in sorted(live.items()))
    counted = f"{sum(live.values())} live ({per_layout})" if live else "none live"
    return f"Snowflake worker leases: {counted}, {len(leases)} rows; `segment_seq leases` lists them."
