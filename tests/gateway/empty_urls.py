"""A URLconf without routes (tests/gateway/test_route_cache.py)."""

urlpatterns: list = []
