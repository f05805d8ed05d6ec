"""Request bodies: per-route size limits, enforced while multipart file parts stream to disk.

The server (serving/http_server.py) already refuses a body over the route's limit before buffering it; this is the
second line, for bodies without a Content-Length and for the limit of each file part.
"""

from django.conf import settings
from django.core.files.uploadhandler import TemporaryFileUploadHandler

from core.errors import TooLarge
from core.limits import MULTIPART_OVERHEAD_BYTES, size_limit_message


class UploadLimit:
    """APIView mixin: the largest file part the view accepts (`upload_limit_bytes`, default maxUploadMB) and the
    message when it is exceeded. A declared Content-Length over it is refused before the body is read."""

    upload_limit_bytes: int | None = None
    upload_limit_what = "file"

    def initial(self, request, *args, **kwargs):
        limit = self.upload_limit_bytes or settings.VIEWER.max_upload_bytes
        declared = request.META.get("CONTENT_LENGTH") or ""
        if declared.isdigit() and int(declared) > limit + MULTIPART_OVERHEAD_BYTES:
            raise TooLarge(size_limit_message(limit, self.upload_limit_what))
        request._request.upload_limit = (limit, self.upload_limit_what)
        super().initial(request, *args, **kwargs)


class SizeLimitedUploadHandler(TemporaryFileUploadHandler):
    """Writes each file part to a temporary file in the data directory and stops at the view's limit."""

    def new_file(self, *args, **kwargs):
        super().new_file(*args, **kwargs)
        self.received = 0
        self.limit, self.what = getattr(self.request, "upload_limit", (settings.VIEWER.max_upload_bytes, "file"))

    def receive_data_chunk(self, raw_data, start):
        self.received += len(raw_data)
        if self.received > self.limit:
            self.file.close()  # a TemporaryUploadedFile deletes itself on close
            raise TooLarge(size_limit_message(self.limit, self.what))
        return super().receive_data_chunk(raw_data, start)
