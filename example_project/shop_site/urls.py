"""URLs of the example project: just the admin, where orders, receipts and sequences can be browsed."""

from django.contrib import admin
from django.urls import path

urlpatterns = [path("admin/", admin.site.urls)]
