from django.contrib import admin
from django.urls import path

from tests.testapp.views import create_orders

urlpatterns = [path("admin/", admin.site.urls), path("async/orders/<int:count>/", create_orders)]
