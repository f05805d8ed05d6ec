"""The tests' WhiteNoise (tests/static_files.py) serves what the gateway's own WhiteNoise serves."""

from whitenoise.middleware import WhiteNoiseMiddleware

from tests.static_files import WhiteNoiseMiddlewareFindingOnce


def test_every_instance_has_the_table_of_a_fresh_whitenoise():
    fresh = WhiteNoiseMiddleware(lambda request: None)
    first, second = (WhiteNoiseMiddlewareFindingOnce(lambda request: None) for _ in range(2))
    assert "/static/viewer/app.js" in fresh.files
    for instance in (first, second):
        assert instance.files.keys() == fresh.files.keys()
        assert {url: file.alternatives for url, file in instance.files.items()} == {url: file.alternatives for url, file in fresh.files.items()}
    assert all(second.files[url] is first.files[url] for url in first.files)  # read once
