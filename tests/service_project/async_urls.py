from django.urls import include, path

urlpatterns = [path("ids/", include("django_segment_seq.service.async_urls"))]
