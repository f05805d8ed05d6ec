"""core/errors.py: application errors carry no HTTP framework; the gateway's edge maps each one to the envelope
{code, message, data} with the status of its code, as the interface spec says."""

from __future__ import annotations

import pytest
from rest_framework import exceptions

from api import envelope
from core import errors


@pytest.mark.parametrize(("error", "code", "status"), [
    (errors.Invalid, 40001, 400),
    (errors.TooLarge, 40002, 400),
    (errors.NotFound, 40400, 404),
    (errors.Conflict, 40900, 409),
    (errors.Upstream, 50200, 502),
])
def test_each_error_becomes_the_envelope_of_its_code(error, code, status):
    response = envelope.envelope_exception_handler(error("it went wrong", data={"field": "x"}), {})
    assert response.status_code == status
    assert response.data == {"code": code, "message": "it went wrong", "data": {"field": "x"}}


def test_an_error_may_carry_another_code_and_status():
    response = envelope.envelope_exception_handler(errors.ApplicationError("the edit service is busy", code=errors.CONFLICT), {})
    assert (response.status_code, response.data["code"]) == (409, 40900)
    response = envelope.envelope_exception_handler(errors.Upstream("busy", http_status=503), {})
    assert (response.status_code, response.data["code"]) == (503, 50200)


def test_application_errors_are_not_drf_exceptions():
    for error in (errors.ApplicationError, errors.Invalid, errors.TooLarge, errors.NotFound, errors.Conflict, errors.Upstream):
        assert not issubclass(error, exceptions.APIException)


def test_a_caller_may_amend_the_message_under_its_old_name():
    error = errors.Conflict("version v3 exists")
    error.detail = f"{error.detail} (already built: m_1 v2)"
    assert str(error) == error.message == "version v3 exists (already built: m_1 v2)"
