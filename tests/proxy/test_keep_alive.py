"""The gateway keeps its connections to the edit service open: several proxied calls, from one thread or from
several (the gateway may run a request on any of its request threads), travel over the connections already open instead of
opening one per call; a forked child does not share its parent's."""

import os
import threading
import time

import pytest

from core.files import create_once
from core.service_secret import HEADER as SECRET_HEADER
from core.service_secret import read_secret, secret_path
from models_app import edit_client
from tests.proxy import test_proxy_faults
from tests.proxy.test_proxy_faults import FakeEditService

pytestmark = pytest.mark.django_db
model = test_proxy_faults.model  # the fixture


@pytest.fixture
def keep_alive_fake(viewer_config):
    service = FakeEditService()
    service.server.RequestHandlerClass.protocol_version = "HTTP/1.1"  # keeps the connection open, like uvicorn
    viewer_config(editServiceURL=service.url)
    yield service
    service.close()


def test_several_proxied_calls_travel_over_one_connection(api, keep_alive_fake, model):
    for _ in range(5):
        assert api.get(f"/api/v1/models/{model.id}/script").json()["code"] == 0
    assert len(keep_alive_fake.received) == 5
    assert len(set(keep_alive_fake.peers)) == 1


def test_calls_from_request_threads_one_after_another_reuse_the_connection(keep_alive_fake):
    def call():
        edit_client.call("GET", "/health")

    for _ in range(4):  # a new thread per call
        thread = threading.Thread(target=call)
        thread.start()
        thread.join()
    assert len(keep_alive_fake.received) == 4
    assert len(set(keep_alive_fake.peers)) == 1


def test_a_forked_child_opens_its_own_connection(keep_alive_fake):
    edit_client.call("GET", "/health")
    parent_pools = edit_client._pools()
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report whether it got pools of its own, and use them
        try:
            fresh = edit_client._pools() is not parent_pools
            edit_client.call("GET", "/health")
            os.write(write_end, b"1" if fresh else b"0")
        finally:
            os._exit(0)
    os.close(write_end)
    answer = os.read(read_end, 1)
    os.waitpid(pid, 0)
    assert answer == b"1"
    edit_client.call("GET", "/health")
    assert len(keep_alive_fake.received) == 3
    assert len(set(keep_alive_fake.peers)) == 2  # the parent's connection, kept; the child's own


def _settle(path):
    """Dates the file a minute back, as a secret written long ago (the client keeps the header of a settled file)."""
    past = time.time() - 60
    os.utime(path, (past, past))


def test_a_secret_replaced_on_disk_is_sent_from_the_next_call(keep_alive_fake, settings):
    """The secret's header is kept between calls, but a changed file is read again: one rewritten in place with a
    value of the same length, and one replaced by a new file."""
    edit_client.call("GET", "/health")
    path = secret_path(settings.VIEWER.dataDir)
    first = read_secret(settings.VIEWER.dataDir)
    _settle(path)
    edit_client.call("GET", "/health")
    edit_client.call("GET", "/health")  # from the kept header
    rewritten = "r" * len(first)
    path.write_text(rewritten + "\n")
    edit_client.call("GET", "/health")
    path.unlink()
    create_once(path, "replaced-secret\n")
    _settle(path)
    edit_client.call("GET", "/health")
    sent = [headers.get(SECRET_HEADER) for headers in keep_alive_fake.received_headers]
    assert sent == [first, first, first, rewritten, "replaced-secret"]
