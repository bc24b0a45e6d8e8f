"""No views: the project exists for its tests."""

urlpatterns: list = []
