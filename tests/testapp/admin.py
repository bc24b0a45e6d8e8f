"""A project's own model admins with the "Void selected" action."""

from django.contrib import admin

from django_segment_seq.audit.actions import VoidActionMixin
from tests.testapp.models import CompanyOrder, DailyOrder


@admin.register(DailyOrder)
class DailyOrderAdmin(VoidActionMixin, admin.ModelAdmin):
    list_display = ["order_no"]


@admin.register(CompanyOrder)
class CompanyOrderAdmin(VoidActionMixin, admin.ModelAdmin):
    void_field = "number"
    list_display = ["company", "number"]
