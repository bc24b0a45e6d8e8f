"""The shop app: orders and receipts numbered from django-segment-seq sequences."""
