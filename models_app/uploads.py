"""Streaming upload handler that enforces the gateway's size limit while the body is read."""

from django.conf import settings
from django.core.files.uploadhandler import TemporaryFileUploadHandler

from viewer_gateway.envelope import TooLarge


def size_limit_message(limit_bytes: int) -> str:
    return f"file exceeds the upload limit of {limit_bytes / (1024 * 1024):g} MB"


class SizeLimitedUploadHandler(TemporaryFileUploadHandler):
    """Writes each file part to a temporary file in the data directory and stops at the configured limit."""

    def new_file(self, *args, **kwargs):
        super().new_file(*args, **kwargs)
        self.received = 0
        self.limit = settings.VIEWER.max_upload_bytes

    def receive_data_chunk(self, raw_data, start):
        self.received += len(raw_data)
        if self.received > self.limit:
            self.file.close()  # a TemporaryUploadedFile deletes itself on close
            raise TooLarge(size_limit_message(self.limit))
        return super().receive_data_chunk(raw_data, start)
