import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django_tasks_db.models import DBTaskResult

from models_app.models import IfcModel

pytestmark = pytest.mark.django_db


@pytest.fixture
def models():
    return {
        status: IfcModel.objects.create(name=f"{status}.ifc", status=status, job="idle")
        for status in ("ready", "failed", "converting")
    }


def test_admin_lists_filters_and_searches_models(admin_client, models):
    page = admin_client.get("/admin/models_app/ifcmodel/")
    assert page.status_code == 200
    assert all(m.id.encode() in page.content for m in models.values())
    failed_only = admin_client.get("/admin/models_app/ifcmodel/?status__exact=failed")
    assert models["failed"].id.encode() in failed_only.content and models["ready"].id.encode() not in failed_only.content
    searched = admin_client.get("/admin/models_app/ifcmodel/?q=ready.ifc")
    assert models["ready"].id.encode() in searched.content and models["failed"].id.encode() not in searched.content


def test_admin_retry_action(admin_client, models):
    response = admin_client.post(
        "/admin/models_app/ifcmodel/",
        {"action": "retry_conversion", "_selected_action": [models["failed"].id]},
        follow=True,
    )
    assert response.status_code == 200
    models["failed"].refresh_from_db()
    assert models["failed"].status == "converting"
    assert DBTaskResult.objects.count() == 1


def test_admin_requires_staff_login(client):
    response = client.get("/admin/models_app/ifcmodel/")
    assert response.status_code == 302 and "/admin/login/" in response["Location"]


def test_retry_conversions_defaults_to_failed(models):
    out = StringIO()
    call_command("retry_conversions", stdout=out)
    assert f"{models['failed'].id} failed.ifc: re-queued" in out.getvalue()
    assert "1 conversion(s) re-queued" in out.getvalue()
    assert IfcModel.objects.get(pk=models["ready"].id).status == "ready"


def test_retry_conversions_all_and_ids(models):
    out = StringIO()
    call_command("retry_conversions", "--all", stdout=out)
    assert "3 conversion(s) re-queued" in out.getvalue()
    out = StringIO()
    call_command("retry_conversions", models["ready"].id, stdout=out)
    assert "1 conversion(s) re-queued" in out.getvalue()
    with pytest.raises(CommandError, match="not found"):
        call_command("retry_conversions", "m_0000000000000000")
    with pytest.raises(CommandError, match="invalid model id"):
        call_command("retry_conversions", "nope")


def test_openapi_document(client):
    response = client.get("/api/v1/openapi.json")
    assert response.status_code == 200
    document = json.loads(response.content)
    assert document["openapi"].startswith("3.")
    assert document["info"]["version"] == "0.2.0"
    for path in ["/api/v1/models", "/api/v1/models/{model_id}", "/api/v1/models/{model_id}/retry", "/api/v1/models/{model_id}/download"]:
        assert path in document["paths"], path


def test_swagger_ui_works_offline(client):
    page = client.get("/api/v1/docs")
    assert page.status_code == 200
    html = page.content.decode()
    assert "/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js" in html
    assert "cdn" not in html.lower()
    asset = client.get("/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js")
    assert asset.status_code == 200
