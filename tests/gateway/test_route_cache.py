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


def test_a_request_s_own_urlconf_is_the_one_its_route_is_taken_from():
    """The access middleware decides on the route Django dispatches to, a middleware's `request.urlconf` included."""
    from django.test import RequestFactory

    request = RequestFactory().get(MODEL_SCRIPT)
    assert edge.request_route(request).url_name == "edit-proxy-script"
    request.urlconf = "tests.gateway.empty_urls"
    assert edge.request_route(request) is None


def test_each_request_is_dispatched_on_its_own_copy_of_the_kept_route():
    from django.test import RequestFactory

    from viewer_gateway.asgi import one_step_handler

    request = RequestFactory().get(MODEL_SCRIPT)
    route = one_step_handler.resolve_request(request)
    kept = edge.resolved_route(MODEL_SCRIPT)
    assert request.resolver_match is route and route is not kept
    assert (route.func, route.url_name, route.kwargs) == (kept.func, kept.url_name, kept.kwargs)
    route.kwargs["model_id"] = "m_changed"
    assert edge.resolved_route(MODEL_SCRIPT).kwargs["model_id"] != "m_changed"
