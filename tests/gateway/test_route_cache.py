"""The edge's route look-up is kept per path and URLconf: never answered from an old URLconf, and never filled with
long paths by a client that has no token."""

from django.test import override_settings

from viewer_gateway import edge

MODEL_SCRIPT = "/api/v1/models/3f2a9c1e-0000-4000-8000-000000000001/script"


def test_a_path_is_resolved_once_and_gives_the_same_route():
    edge._resolved.cache_clear()
    first = edge.resolved_route(MODEL_SCRIPT)
    assert first is not None and edge.resolved_route(MODEL_SCRIPT) is first
    assert edge._resolved.cache_info().hits == 1


def test_a_changed_urlconf_is_not_answered_from_the_cache():
    assert edge.route_name(MODEL_SCRIPT) is not None
    with override_settings(ROOT_URLCONF="tests.gateway.empty_urls"):
        assert edge.route_name(MODEL_SCRIPT) is None
    assert edge.route_name(MODEL_SCRIPT) is not None


def test_long_paths_are_resolved_but_not_kept():
    edge._resolved.cache_clear()
    long_path = "/api/v1/models/" + "x" * edge.CACHED_PATH_MAX
    assert edge.route_name(long_path) == "model-detail"
    assert edge._resolved.cache_info().currsize == 0
    assert edge.route_name(long_path[: edge.CACHED_PATH_MAX]) == "model-detail"
    assert edge._resolved.cache_info().currsize == 1
