"""The web client's page (templates/viewer/index.html), with the chunks its script loads at once named as module
preloads: app.js imports main.js, which imports xeokit and the rest, each request waiting for the file before it; the
page's `<link rel="modulepreload">` lets the browser fetch and compile them all beside app.js (frontend/build.mjs
writes their names to preload.json; docs/architecture/web-client.md)."""

from __future__ import annotations

import json
import re
from functools import cache

from django.contrib.staticfiles import finders
from django.views.generic import TemplateView

PRELOAD_MANIFEST = "viewer/preload.json"
CHUNK_NAME = re.compile(r"chunks/[A-Za-z0-9_-]+\.js")


@cache
def start_chunks() -> tuple[str, ...]:
    """The static paths ("viewer/chunks/main-<hash>.js", ...) of the chunks app.js loads at once; none without a
    built web client. Read once per process, as whitenoise indexes the static files once (WHITENOISE_AUTOREFRESH)."""
    path = finders.find(PRELOAD_MANIFEST)
    if path is None:
        return ()
    with open(path, encoding="utf-8") as manifest:
        names = json.load(manifest)
    return tuple(f"viewer/{name}" for name in names if isinstance(name, str) and CHUNK_NAME.fullmatch(name))


class WebClientView(TemplateView):
    template_name = "viewer/index.html"

    def get_context_data(self, **kwargs):
        return {**super().get_context_data(**kwargs), "module_preloads": start_chunks()}
