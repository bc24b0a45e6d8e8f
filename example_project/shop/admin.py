"""Admin pages for orders and receipts, listing their sequence numbers."""

from django.contrib import admin

from .models import Order, Receipt


@admin.register(Order)
class OrderAdmin(admin.ModelAdmin):
    list_display = ["order_no", "customer", "created"]
    search_fields = ["order_no", "customer"]
    readonly_fields = ["order_no"]  # a SequenceField is not editable: shown on the change page, filled on save


@admin.register(Receipt)
class ReceiptAdmin(admin.ModelAdmin):
    list_display = ["id", "order", "created"]
    list_select_related = ["order"]
    raw_id_fields = ["order"]
