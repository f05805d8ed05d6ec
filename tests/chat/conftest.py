import pytest


@pytest.fixture(autouse=True)
def fast_offline_model(monkeypatch):
    """The offline model streams its words without pauses here."""
    monkeypatch.setattr("chat_app.agent.scripted.PIECE_DELAY_SECONDS", 0)
