"""diff/upload streams the file part to a temporary file in the data directory and stops at the size limit."""

from django.conf import settings
from django.core.files.uploadhandler import TemporaryFileUploadHandler

from edit_service.engine.errors import Invalid


class SizeLimitedUploadHandler(TemporaryFileUploadHandler):
    def new_file(self, *args, **kwargs):
        super().new_file(*args, **kwargs)
        self.received = 0

    def receive_data_chunk(self, raw_data, start):
        self.received += len(raw_data)
        if self.received > settings.UPLOAD_MAX_BYTES:
            self.file.close()
            raise Invalid(f"the file exceeds the upload limit of {settings.UPLOAD_MAX_BYTES // (1024 * 1024)} MB")
        return super().receive_data_chunk(raw_data, start)
