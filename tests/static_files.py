"""WhiteNoise as the gateway runs it, with the table of static files its finders yield read once per test process.

Every Django test client builds the middleware chain anew, and WhiteNoise lists and stats every file the static
finders know (the admin's, DRF's, the web client's build) each time: ~30 ms per client, ~30 s of processor time
over the suite (a py-spy profile of `make test`). The table is the same for every client of a run; the deployed
gateway builds its one chain once and uses WhiteNoise itself (tests/settings.py swaps only this entry).
"""

from whitenoise.middleware import WhiteNoiseMiddleware


class WhiteNoiseMiddlewareFindingOnce(WhiteNoiseMiddleware):
    _found: dict | None = None  # URL -> StaticFile, as the first instance's finders gave them

    def add_files_from_finders(self):
        cls = type(self)
        if cls._found is None:
            before = dict(self.files)
            super().add_files_from_finders()
            cls._found = {url: file for url, file in self.files.items() if before.get(url) is not file}
        else:
            self.files.update(cls._found)
