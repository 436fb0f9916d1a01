"""A stand-in for the CRM's own data: a lead, saved in the same transaction as its events."""

from django.db import models


class Lead(models.Model):
    class Stage(models.TextChoices):
        NEW = "new", "new"
        QUALIFIED = "qualified", "qualified"

    email = models.EmailField()
    phone = models.CharField(max_length=32, blank=True)
    stage = models.CharField(max_length=16, choices=Stage.choices, default=Stage.NEW)
    gclid = models.CharField(max_length=128, blank=True)

    def __str__(self) -> str:
        return f"lead {self.id} ({self.stage})"
