"""An attacker's probe of the BCF API 3.0, the Foundation API and its OAuth2 endpoints (issue 35): GUIDs of another
project under one's own, roles that may not, bad ids, malformed bodies, OData abuse, OAuth2 tricks, routing headers
and cross-site requests. Each test states what must hold."""

from __future__ import annotations

import json
import uuid
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
from django.test import Client

from issues_app.models import Issue
from tests.accounts.people import bearer, token_of
from tests.accounts.test_attack_regressions import share_link_client
from tests.bcfapi.conftest import (
    REDIRECT_URI,
    as_bearer,
    authorize_url,
    code_from,
    consent,
    csrf_of,
    exchange,
    pkce_pair,
    register_client,
    signed_in_browser,
)
from tests.bcfapi.test_oauth_flow import token_request as token_request_form
from tests.bcfapi.topic_helpers import answer, make_team, send, xeokit_viewpoint

pytestmark = pytest.mark.django_db


class RawClient(Client):
    """A client whose answers skip the schema check (a CORS preflight has no schema row)."""

    request = Client.request  # taken before conftest's every_answer_checked wraps Client.request


@pytest.fixture
def teams():
    """Tower (olga owns, rita reviews, vera views) and Annex (anna owns); Annex has a topic with a comment, a viewpoint
    and a document."""
    tower = make_team()
    annex = make_team((("anna", "owner"),))
    anna = annex.clients["anna"]
    topic = answer(anna, "POST", f"{annex.base}/topics", {"title": "Annex secret"}, status=201)
    viewpoint = answer(anna, "POST", f"{annex.base}/topics/{topic['guid']}/viewpoints", xeokit_viewpoint(), status=201)
    comment = answer(anna, "POST", f"{annex.base}/topics/{topic['guid']}/comments", {"comment": "hidden", "viewpoint_guid": viewpoint["guid"]}, status=201)
    document = anna.post(f"{annex.base}/documents", b"secret bytes", content_type="application/octet-stream",
                         headers={"Content-Disposition": 'attachment; filename="secret.txt"'})
    assert document.status_code == 201, document.content
    return {"tower": tower, "annex": annex, "topic": topic, "viewpoint": viewpoint, "comment": comment, "document": document.json()}


def test_guids_of_another_project_are_not_found_under_ones_own(teams):
    tower, annex_topic = teams["tower"], teams["topic"]
    olga = tower.clients["olga"]
    guid, vp, cm, doc = annex_topic["guid"], teams["viewpoint"]["guid"], teams["comment"]["guid"], teams["document"]["guid"]
    for path in (f"topics/{guid}", f"topics/{guid}/comments", f"topics/{guid}/comments/{cm}", f"topics/{guid}/viewpoints/{vp}",
                 f"topics/{guid}/viewpoints/{vp}/snapshot", f"topics/{guid}/viewpoints/{vp}/selection", f"topics/{guid}/files",
                 f"topics/{guid}/related_topics", f"topics/{guid}/events", f"topics/{guid}/document_references", f"documents/{doc}"):
        send(olga, "GET", f"{tower.base}/{path}", status=404)
    send(olga, "PUT", f"{tower.base}/topics/{guid}", {"title": "taken over"}, status=404)
    send(olga, "DELETE", f"{tower.base}/topics/{guid}", status=404)
    send(olga, "POST", f"{tower.base}/topics/{guid}/comments", {"comment": "x"}, status=404)
    assert Issue.objects.get(bcf_topic_guid=guid).title == "Annex secret"


def test_an_own_topic_cannot_point_at_another_projects_topic_viewpoint_or_document(teams):
    tower = teams["tower"]
    rita = tower.clients["rita"]
    mine = answer(rita, "POST", f"{tower.base}/topics", {"title": "mine"}, status=201)
    base = f"{tower.base}/topics/{mine['guid']}"
    send(rita, "PUT", f"{base}/related_topics", [{"related_topic_guid": teams["topic"]["guid"]}], status=400)
    send(rita, "POST", f"{base}/comments", {"comment": "see", "viewpoint_guid": teams["viewpoint"]["guid"]}, status=400)
    send(rita, "POST", f"{base}/document_references", {"document_guid": teams["document"]["guid"]}, status=400)
    assert answer(rita, "GET", f"{base}/document_references") == []


def test_a_topic_guid_used_in_another_project_neither_conflicts_nor_reaches_it(teams):
    tower, guid = teams["tower"], teams["topic"]["guid"]
    rita = tower.clients["rita"]
    created = answer(rita, "POST", f"{tower.base}/topics", {"guid": guid, "title": "same guid"}, status=201)
    assert created["title"] == "same guid"
    assert Issue.objects.get(bcf_topic_guid=guid, model=teams["annex"].model).title == "Annex secret"
    assert answer(rita, "GET", f"{tower.base}/topics/{guid}")["title"] == "same guid"


def test_an_outsider_sees_no_project_of_others(teams):
    tower, annex = teams["tower"], teams["annex"]
    anna = annex.clients["anna"]
    assert [project["project_id"] for project in answer(anna, "GET", "/bcf/3.0/projects")] == [annex.project.id]
    for path in ("", "/extensions", "/topics", "/files_information", "/documents", "/topics/events", "/topics/comments/events"):
        send(anna, "GET", f"{tower.base}{path}", status=404)
    send(anna, "POST", f"{tower.base}/topics", {"title": "x"}, status=404)
    send(anna, "PUT", tower.base, {"name": "owned"}, status=404)


def test_roles_and_read_only_credentials_write_nothing(teams):
    tower = teams["tower"]
    topic = answer(tower.clients["rita"], "POST", f"{tower.base}/topics", {"title": "t"}, status=201)
    readers = {"viewer": tower.clients["vera"], "read token": bearer(token_of("olga", "read")["token"])}
    for who, client in readers.items():
        for method, path, body in (("POST", "topics", {"title": "x"}), ("PUT", f"topics/{topic['guid']}", {"title": "x"}),
                                   ("DELETE", f"topics/{topic['guid']}", None), ("POST", f"topics/{topic['guid']}/comments", {"comment": "x"}),
                                   ("POST", f"topics/{topic['guid']}/viewpoints", xeokit_viewpoint()), ("PUT", "", {"name": "renamed"})):
            response = send(client, method, f"{tower.base}/{path}".rstrip("/"), body, status=403)
            assert response.status_code == 403, who
    send(tower.clients["rita"], "PUT", tower.base, {"name": "renamed"}, status=403)
    link = share_link_client(tower.project)
    response = link.post(f"{tower.base}/topics", json.dumps({"title": "x"}), content_type="application/json")
    assert response.status_code in (401, 403, 404), response.content
    assert Issue.objects.filter(model=tower.model).count() == 1


@pytest.mark.parametrize("guid", ["..", "%2e%2e", "..%2F..%2Fsecret", "not-a-guid", "ä" * 40, "0" * 5000, "%00"])
def test_odd_topic_guids_are_404_and_never_500(teams, guid):
    tower = teams["tower"]
    response = tower.clients["olga"].get(f"{tower.base}/topics/{guid}")
    assert response.status_code in (400, 404), (guid, response.status_code)
    response = tower.clients["olga"].get(f"{tower.base}/documents/{guid}")
    assert response.status_code in (400, 404), (guid, response.status_code)


@pytest.mark.parametrize("body", ["{", "[]", "null", '"x"', b"\xff\xfe\x00", '{"title": "a"} x', '{"title": ' + "[" * 5000 + "]" * 5000 + "}"])
def test_malformed_topic_bodies_are_400(teams, body):
    tower = teams["tower"]
    response = tower.clients["rita"].post(f"{tower.base}/topics", body, content_type="application/json")
    assert response.status_code == 400, (body[:30], response.status_code, response.content[:200])


@pytest.mark.parametrize("body", [{"title": 7}, {"title": "x" * 100_000}, {"title": "t", "labels": "not a list"}, {"title": "t", "labels": [{}]},
                                  {"title": "t", "due_date": "tomorrow"}, {"title": "t", "guid": "../x"}, {"title": "t", "topic_status": "Hacked"},
                                  {"title": "t", "reference_links": ["javascript:alert(1)"] * 10_000}])
def test_wrong_types_are_400_naming_the_field(teams, body):
    tower = teams["tower"]
    send(tower.clients["rita"], "POST", f"{tower.base}/topics", body, status=400)
    assert not Issue.objects.filter(model=tower.model).exists()


@pytest.mark.parametrize("query", [
    {"$filter": "(" * 10_000 + "title eq 'a'" + ")" * 10_000},
    {"$filter": "not " * 5000 + "title eq 'a'"},
    {"$filter": " or ".join(["title eq 'a'"] * 2000)},
    {"$filter": "labels/any(l: l/any(m: m eq 'a'))"},
    {"$filter": "title eq 'a'') or (''1'' eq ''1'"},
    {"$filter": "__class__ eq 'x'"},
    {"$filter": "title eq 1e999999"},
    {"$top": "-1"}, {"$top": "99999999999999999999999"}, {"$skip": "-5"}, {"$top": "1.5"}, {"$top": "NaN"},
    {"$orderby": "title desc, " * 2000 + "title"},
    {"$orderby": "guid; drop table"},
])
def test_odata_abuse_is_400(teams, query):
    """Each names a field, function, operator or number the topic list does not take (title is no $filter or
    $orderby parameter of the API's topics, README 3.2.1), is nested beyond the parser's limits, or pages outside
    0..500: a bad query, 400 naming it."""
    tower = teams["tower"]
    response = tower.clients["olga"].get(f"{tower.base}/topics", query)
    assert (response.status_code, response.json()["code"]) == (400, 40001), (list(query.values())[0][:40], response.content[:300])


def test_an_injected_filter_does_not_widen_the_answer(teams):
    """'' escapes a quote in an OData string: the filter is one comparison with the text zzz' or '1' eq '1, which
    no topic has (200, none). On title, which is no $filter parameter of the API's topics, it is a bad query (400)."""
    tower = teams["tower"]
    rita = tower.clients["rita"]
    answer(rita, "POST", f"{tower.base}/topics", {"title": "a", "topic_type": "Issue"}, status=201)
    answer(rita, "POST", f"{tower.base}/topics", {"title": "b", "topic_type": "Issue"}, status=201)
    assert answer(rita, "GET", f"{tower.base}/topics?" + urlencode({"$filter": "topic_type eq 'zzz'' or ''1'' eq ''1'"})) == []
    assert len(answer(rita, "GET", f"{tower.base}/topics?" + urlencode({"$filter": "topic_type eq 'Issue'"}))) == 2
    send(rita, "GET", f"{tower.base}/topics?" + urlencode({"$filter": "title eq 'zzz'' or ''1'' eq ''1'"}), status=400)


def test_a_huge_query_string_is_refused(teams):
    """20,000 query fields: more than Django's DATA_UPLOAD_MAX_NUMBER_FIELDS, refused as a bad request (400, 40001)
    rather than parsed (tests/accounts/test_attack_regressions_coordination.py asks the same of the REST API)."""
    tower = teams["tower"]
    response = tower.clients["olga"].get(f"{tower.base}/topics?" + urlencode({f"p{index}": "x" * 50 for index in range(20_000)}))
    assert (response.status_code, response.json()["code"]) == (400, 40001), response.content[:300]


# --- OAuth2 ----------------------------------------------------------------------------------------------------------


def _location_query(response) -> dict:
    return parse_qs(urlsplit(response["Location"]).query)


@pytest.mark.parametrize("redirect_uri", [REDIRECT_URI + "/../evil", REDIRECT_URI + "?next=https://evil.example", REDIRECT_URI + "x",
                                          "http://localhost:8080/callback#frag", "http://evil.example/callback", "HTTP://LOCALHOST:8080/callback/",
                                          "http://localhost:8080@evil.example/callback"])
def test_a_redirect_uri_other_than_the_registered_one_gets_no_code(teams, redirect_uri):
    desktop = register_client()
    browser = signed_in_browser("olga")
    page = browser.get(authorize_url(desktop, redirect_uri=redirect_uri))
    assert not (page.status_code == 302 and "code" in _location_query(page)), page["Location"]
    if page.status_code == 302:
        assert not page["Location"].startswith("http://evil.example"), page["Location"]


def test_a_code_is_used_once_and_only_by_its_own_client(teams):
    desktop, other = register_client(), register_client("Other client")
    code = code_from(consent(signed_in_browser("olga"), desktop))
    assert exchange(other, code).status_code in (400, 401)
    first = exchange(desktop, code)
    assert first.status_code in (200, 400)  # the code may have died with the other client's attempt: either way no second use
    assert exchange(desktop, code).status_code in (400, 401)


def test_a_public_client_without_the_verifier_gets_no_token(teams):
    public = register_client("Browser plugin", confidential=False)
    verifier, challenge = pkce_pair()
    code = code_from(consent(signed_in_browser("olga"), public, code_challenge=challenge, code_challenge_method="S256"))
    assert exchange(public, code).status_code == 400
    code = code_from(consent(signed_in_browser("olga"), public, code_challenge=challenge, code_challenge_method="S256"))
    assert exchange(public, code, code_verifier="x" * 60).status_code == 400


def test_the_tokens_of_a_deleted_application_stop_working(teams):
    desktop = register_client()
    tokens = exchange(desktop, code_from(consent(signed_in_browser("olga"), desktop))).json()
    assert as_bearer(tokens["access_token"]).get("/foundation/1.0/current-user").status_code == 200
    desktop.application.delete()
    assert as_bearer(tokens["access_token"]).get("/foundation/1.0/current-user").status_code == 401
    form = {"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"]}
    assert token_request_form(form, desktop.basic).status_code in (400, 401)


def test_consent_without_the_csrf_token_or_from_another_origin_issues_no_code(teams):
    desktop = register_client()
    browser = signed_in_browser("olga")
    page = browser.get(authorize_url(desktop))
    assert page.status_code == 200
    form = {"client_id": desktop.client_id, "redirect_uri": REDIRECT_URI, "response_type": "code", "state": "s", "scope": "read write", "allow": "Authorize"}
    response = browser.post("/foundation/oauth2/authorize", form)
    assert response.status_code == 403, response.status_code
    response = browser.post("/foundation/oauth2/authorize", {**form, "csrfmiddlewaretoken": csrf_of(browser)},
                            headers={"Origin": "https://evil.example"}, secure=True)
    assert not (response.status_code == 302 and "code" in _location_query(response))


@pytest.mark.parametrize("next_url", ["https://evil.example/", "//evil.example/", "/\\evil.example", "http:evil.example", "https:///evil.example"])
def test_the_sign_in_page_does_not_redirect_off_site(teams, next_url):
    browser = Client(enforce_csrf_checks=True)
    browser.get("/sign-in")
    response = browser.post("/sign-in", {"username": "olga", "password": "correct horse battery staple", "next": next_url,
                                         "csrfmiddlewaretoken": csrf_of(browser)})
    assert response.status_code == 302
    location = urlsplit(response["Location"])
    assert location.netloc in ("", "testserver") and not response["Location"].startswith(("//", "/\\")), response["Location"]


# --- routing headers, cross-site requests ---------------------------------------------------------------------------


def test_an_untrusted_forwarded_host_does_not_go_into_the_discovery_urls(teams):
    response = Client().get("/foundation/versions", headers={"X-Forwarded-Host": "evil.example", "X-Forwarded-Proto": "http"})
    assert response.status_code == 200
    assert "evil.example" not in response.content.decode()
    response = Client().get("/foundation/1.0/auth", headers={"X-Forwarded-Host": "evil.example", "X-Forwarded-Prefix": "/evil"})
    assert "evil" not in response.content.decode()


def test_a_host_that_is_not_allowed_is_refused_or_kept_out_of_the_urls(teams):
    response = Client(HTTP_HOST="evil.example").get("/foundation/versions")
    assert response.status_code == 400 or "evil.example" not in response.content.decode()


def test_a_cors_preflight_from_an_unknown_origin_is_not_allowed(teams):
    tower = teams["tower"]
    response = RawClient().options(f"{tower.base}/topics", headers={"Origin": "https://evil.example", "Access-Control-Request-Method": "POST",
                                                                  "Access-Control-Request-Headers": "authorization, content-type"})
    assert response.get("Access-Control-Allow-Origin") in (None, ""), dict(response.headers)
    assert response.get("Access-Control-Allow-Credentials") != "true"


def test_a_cross_site_write_with_the_session_cookie_is_refused(teams):
    tower = teams["tower"]
    browser = signed_in_browser("rita")
    response = browser.post(f"{tower.base}/topics", json.dumps({"title": "csrf"}), content_type="application/json",
                            headers={"Origin": "https://evil.example"})
    assert response.status_code in (401, 403), response.status_code
    assert not Issue.objects.filter(title="csrf").exists()


def test_a_configured_cors_origin_gets_no_credentialed_access(teams, viewer_config):
    viewer_config(corsOrigins=("https://client.example",))
    tower = teams["tower"]
    response = RawClient().options(f"{tower.base}/topics", headers={"Origin": "https://client.example", "Access-Control-Request-Method": "GET"})
    assert response.get("Access-Control-Allow-Credentials") != "true", dict(response.headers)


def test_a_new_uuid_topic_is_not_visible_from_another_project_through_events(teams):
    tower, annex = teams["tower"], teams["annex"]
    events = answer(tower.clients["olga"], "GET", f"{tower.base}/topics/events")
    assert all(event.get("topic_guid") != teams["topic"]["guid"] for event in events)
    events = answer(tower.clients["olga"], "GET", f"{tower.base}/topics/comments/events")
    assert all(event.get("comment_guid") != teams["comment"]["guid"] for event in events)
    assert uuid.UUID(teams["topic"]["guid"]) and annex.project.id != tower.project.id


def test_the_consent_page_escapes_the_clients_name_and_the_state(teams):
    hostile = register_client('<script>alert("name")</script>')
    browser = signed_in_browser("olga")
    page = browser.get(authorize_url(hostile, state='"><script>alert("state")</script>'))
    assert page.status_code == 200
    text = page.content.decode()
    assert "<script>alert(" not in text, "the consent page put a client's name or the state into the page unescaped"


def test_a_code_is_not_exchanged_for_another_redirect_uri_or_a_wider_scope(teams):
    desktop = register_client()
    code = code_from(consent(signed_in_browser("olga"), desktop, scope="read"))
    form = {"grant_type": "authorization_code", "code": code, "redirect_uri": "http://localhost:8080/other"}
    assert token_request_form(form, desktop.basic).status_code in (400, 401)
    code = code_from(consent(signed_in_browser("olga"), desktop, scope="read"))
    tokens = exchange(desktop, code, scope="read write")
    if tokens.status_code == 200:
        assert "write" not in tokens.json()["scope"].split(), tokens.json()


def test_a_bcf_project_name_of_the_wrong_type_or_size_is_400(teams):
    tower = teams["tower"]
    olga = tower.clients["olga"]
    for body in ({"name": 7}, {"name": None}, {"name": "x" * 100_000}, {"name": ""}, ["name"]):
        response = olga.put(tower.base, json.dumps(body), content_type="application/json")
        assert response.status_code == 400, (str(body)[:40], response.status_code, response.content[:200])
    tower.project.refresh_from_db()
    assert tower.project.title == "Tower"
    response = olga.put(tower.base, json.dumps({"name": "ok", "project_id": teams["annex"].project.id}), content_type="application/json")
    assert response.status_code == 400 or response.json()["project_id"] == tower.project.id  # a read-only field: refused or ignored
    teams["annex"].project.refresh_from_db()
    assert teams["annex"].project.title == "Tower"  # Annex's own title (make_team names every project Tower), untouched


def test_another_reviewers_comment_cannot_be_changed_or_deleted(teams):
    tower = teams["tower"]
    olga, rita = tower.clients["olga"], tower.clients["rita"]
    topic = answer(rita, "POST", f"{tower.base}/topics", {"title": "t"}, status=201)
    comment = answer(olga, "POST", f"{tower.base}/topics/{topic['guid']}/comments", {"comment": "owner's word"}, status=201)
    send(rita, "PUT", f"{tower.base}/topics/{topic['guid']}/comments/{comment['guid']}", {"comment": "forged"}, status=403)
    send(rita, "DELETE", f"{tower.base}/topics/{topic['guid']}/comments/{comment['guid']}", status=403)
    assert answer(olga, "GET", f"{tower.base}/topics/{topic['guid']}/comments/{comment['guid']}")["comment"] == "owner's word"


def test_an_oauth_token_cannot_mint_a_personal_token_that_outlives_it(teams):
    """A BCF client's access token lives an hour and dies with its app or a revoke; a personal token it made would
    keep the client in the account after both."""
    desktop = register_client()
    tokens = exchange(desktop, code_from(consent(signed_in_browser("olga"), desktop))).json()
    client = as_bearer(tokens["access_token"])
    response = client.post("/api/v1/auth/tokens", json.dumps({"name": "forever", "scope": "write"}), content_type="application/json")
    body = response.json()
    assert body["code"] != 0 or body["data"]["expiresAt"] is not None, "an OAuth access token minted a personal token that never expires"
    if body["code"] == 0:
        desktop.application.delete()
        assert bearer(body["data"]["token"]).get("/api/v1/auth/me").status_code == 401, "the minted token outlived the deleted application"


def test_an_oauth_token_does_not_reach_the_accounts_api_of_its_user(teams):
    desktop = register_client()
    tokens = exchange(desktop, code_from(consent(signed_in_browser("olga"), desktop))).json()
    client = as_bearer(tokens["access_token"])
    response = client.post("/api/v1/auth/password", json.dumps({"old": "correct horse battery staple", "new": "pwned pwned pwned"}),
                           content_type="application/json")
    assert response.status_code in (400, 401, 403), response.content[:200]


def test_an_oauth_token_of_an_owner_cannot_hand_the_project_to_another_account(teams):
    """A BCF client acts on the BCF API for its user. Its token reached the whole REST API: with an owner's consent
    it made the client's author an owner of the project (and could make share links), access that outlives the
    token, a revoke and the deleted application."""
    from accounts_app.models import ProjectMember
    from tests.accounts.people import person

    tower = teams["tower"]
    intruder = person("mallory")
    desktop = register_client()
    tokens = exchange(desktop, code_from(consent(signed_in_browser("olga"), desktop))).json()
    client = as_bearer(tokens["access_token"])
    response = client.put(f"/api/v1/projects/{tower.project.id}/members/mallory", json.dumps({"role": "owner"}), content_type="application/json")
    assert not ProjectMember.objects.filter(user=intruder).exists(), f"an OAuth client made another account an owner: {response.content[:200]}"
    response = client.post(f"/api/v1/projects/{tower.project.id}/share-links", json.dumps({"expiresAt": "2099-01-01T00:00:00Z"}),
                           content_type="application/json")
    assert response.status_code in (401, 403, 404), response.content[:200]


def test_an_oauth_token_acts_on_the_bcf_api_only(teams):
    """The user allowed a client to sync issues: its token reads and writes topics, nothing of the REST API."""
    tower = teams["tower"]
    desktop = register_client()
    tokens = exchange(desktop, code_from(consent(signed_in_browser("olga"), desktop))).json()
    client = as_bearer(tokens["access_token"])
    assert client.get(f"/bcf/3.0/projects/{tower.project.id}").status_code == 200
    for method, path in [("get", f"/api/v1/models/{tower.model.id}"), ("get", "/api/v1/models"),
                         ("delete", f"/api/v1/models/{tower.model.id}"), ("get", f"/api/v1/models/{tower.model.id}/issues")]:
        response = getattr(client, method)(path)
        assert response.status_code == 403 and response.json()["code"] == 40300, (method, path, response.content[:200])
