from django.contrib import admin
from django.urls import include, path

from tests.testapp.views import create_orders

urlpatterns = [
    path("admin/", admin.site.urls),
    path("async/orders/<int:count>/", create_orders),
    path("ids/", include("django_segment_seq.service.urls")),
    path("aids/", include("django_segment_seq.service.async_urls")),
]
