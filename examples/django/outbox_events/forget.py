"""Forgetting a lead (GDPR Art. 17): the dispatcher's rows of it lose their personal data.

`forget_lead` runs the dispatcher's `outbox_forget_lead()` on
`connections[using].cursor()`, so it is part of the caller's transaction: call
it inside the CRM's own deletion of the lead, and both commit or neither does.
Every row of the lead, in every state, loses its personal data; rows not sent
yet are closed (dead, "forgotten on request") so nothing more of the lead is
sent; an audit record says who asked. See the dispatcher's docs/personal_data.md.
"""

from __future__ import annotations

import getpass
import socket
from dataclasses import dataclass
from typing import Optional

from django.db import DEFAULT_DB_ALIAS, connections

from .enqueue import _check_lead, _execute

__all__ = ["ForgetReport", "forget_lead"]

_FORGET = "SELECT rows_erased, rows_closed, rows_in_flight FROM outbox_forget_lead(%s, %s, %s)"


@dataclass(frozen=True)
class ForgetReport:
    rows_erased: int  # rows of the lead, every state
    rows_closed: int  # of them not sent yet: now dead, never sent
    rows_in_flight: int  # of those, with a request out at that moment: not sent again


def forget_lead(
    lead_project_id: int, requested_by: Optional[str] = None, *, dry_run: bool = False, using: str = DEFAULT_DB_ALIAS
) -> ForgetReport:
    """Erases the personal data of every row of the lead; `requested_by` goes into the audit record."""
    _check_lead(lead_project_id)
    who = requested_by or f"{getpass.getuser()}@{socket.gethostname()}"
    with connections[using].cursor() as cursor:
        _execute(cursor, using, _FORGET, [lead_project_id, who, dry_run])
        erased, closed, in_flight = cursor.fetchone()
    return ForgetReport(rows_erased=erased, rows_closed=closed, rows_in_flight=in_flight)
