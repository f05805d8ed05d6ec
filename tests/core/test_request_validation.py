"""api/views.py through real routes: a body that is JSON but not an object gets 40001 with one message on every route
that reads an object, an empty body reads as {}, and nothing is changed."""

from __future__ import annotations

import pytest

from chat_app.models import ChatSession
from models_app.models import IfcModel

NOT_AN_OBJECT = {"code": 40001, "message": "the body must be a JSON object", "data": None}


@pytest.mark.django_db
@pytest.mark.parametrize(("method", "path"), [
    ("put", "/api/v1/models/m_0000000000000000/entities/2O2Fr$t4X7Zf8NOew3FLOH/properties"),
    ("post", "/api/v1/chat/sessions"),
    ("post", "/api/v1/chat/projects"),
])
@pytest.mark.parametrize("body", ["[1, 2]", '"text"', "3"])
def test_a_json_body_that_is_not_an_object_is_refused_by_every_object_route(api, method, path, body):
    IfcModel.objects.create(id="m_0000000000000000", name="known.ifc")  # an unknown one is refused before its body
    response = getattr(api, method)(path, body, content_type="application/json")
    assert (response.status_code, response.json()) == (400, NOT_AN_OBJECT)
    assert not ChatSession.objects.exists()


@pytest.mark.django_db
def test_an_empty_body_reads_as_an_empty_object(api):
    response = api.post("/api/v1/chat/projects", b"", content_type="application/json")
    assert response.json()["code"] == 40001
    assert response.json()["message"].startswith("kind")  # the serializer's complaint about {}, not about the body
