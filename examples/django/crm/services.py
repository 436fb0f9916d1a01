"""The CRM's writes that also tell the ad platforms: each one a single transaction.

The lead's change and its outbox rows commit together or not at all, so no
`transaction.on_commit` is needed and a rolled-back request sends nothing.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any, Dict

from django.db import transaction
from django.utils import timezone

from outbox_events import enqueue_event, enqueue_fanout

from .models import Lead


def lead_event(lead: Lead, **extra: Any) -> Dict[str, Any]:
    """The canonical event (docs/providers.md) for a lead."""
    event: Dict[str, Any] = {
        "event_time": timezone.now(),
        "action_source": "system_generated",
        "email": lead.email,
        "phone": lead.phone,
        "external_id": f"crm-lead-{lead.id}",
    }
    if lead.gclid:
        event["gclid"] = lead.gclid
    event.update(extra)
    return event


def qualify_lead(lead: Lead) -> Dict[str, bool]:
    """Marks the lead qualified and fans "Lead" out to settings.OUTBOX_EVENTS["DEFAULT_FANOUT"]."""
    with transaction.atomic():
        lead.stage = Lead.Stage.QUALIFIED
        lead.save(update_fields=["stage"])
        return enqueue_fanout(lead.id, "Lead", lead_event(lead))


def record_purchase(lead: Lead, order_id: str, value: Decimal) -> bool:
    """Tells the CRM's own webhook receiver about a purchase; False when already told."""
    with transaction.atomic():
        return enqueue_event(
            lead.id,
            "webhook",
            "Purchase",
            lead_event(lead, order_id=order_id, value=value, currency="EUR"),
            destination="crm_hook",
        )
