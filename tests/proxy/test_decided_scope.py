"""A proxied call looks its model up once: the access decision's scope (models_app.access_scopes), left on the
request as `access_scope`, says whether the model exists and is outside the trash, and the view passes it to
script_services.forward instead of a second query. A trashed or unknown model is still refused with 40400 and nothing is forwarded."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from accounts_app.models import Account
from models_app.access_scopes import model_scope
from models_app.models import IfcModel
from tests.accounts.people import person, signed_in
from tests.proxy.test_proxy_faults import fake, model  # noqa: F401 - fixtures

pytestmark = pytest.mark.django_db


def _model_lookups(queries) -> int:
    return sum(IfcModel._meta.db_table in query["sql"] for query in queries)


def test_a_proxied_call_looks_its_model_up_once(api, fake, model):  # noqa: F811
    with CaptureQueriesContext(connection) as queries:
        assert api.get(f"/api/v1/models/{model.id}/script").json()["code"] == 0
    assert _model_lookups(queries.captured_queries) == 1
    assert len(fake.received) == 1


def test_a_trashed_model_is_refused_without_forwarding(api, fake, model):  # noqa: F811
    IfcModel.objects.filter(pk=model.id).update(deleted_at=timezone.now())
    answer = api.post(f"/api/v1/models/{model.id}/script/run", {}, format="json")
    assert (answer.status_code, answer.json()["code"]) == (404, 40400)
    assert fake.received == []


def test_its_owner_may_see_a_trashed_model_but_not_edit_its_script(fake):  # noqa: F811
    """The access decision lets a trashed model's owner at it (to restore it); the script routes still refuse it."""
    owner = person("olga")
    Account.objects.filter(user=owner).update(role="user")
    trashed = IfcModel.objects.create(name="t.ifc", status="ready", uploaded_by=owner, deleted_at=timezone.now())
    assert model_scope(trashed.id).in_trash
    answer = signed_in(owner).get(f"/api/v1/models/{trashed.id}/script")
    assert (answer.status_code, answer.json()["code"]) == (404, 40400)
    assert fake.received == []


def test_an_unknown_model_is_refused_without_forwarding(api, fake):  # noqa: F811
    answer = api.get("/api/v1/models/m_0123456789abcdef/script")
    assert (answer.status_code, answer.json()["code"]) == (404, 40400)
    assert fake.received == []
