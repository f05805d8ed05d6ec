import json
import struct
import zlib

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from models_app.models import IfcModel
from models_app.storage import model_dir


def png_bytes(width: int = 2, height: int = 2, padding: int = 0) -> bytes:
    """A real PNG (optionally padded with a large ancillary chunk to reach a given size)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    raw = b"".join(b"\x00" + b"\xff\x00\x00" * width for _ in range(height))
    chunks = [chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))]
    if padding:
        chunks.append(chunk(b"tEXt", b"pad\x00" + b"x" * padding))
    chunks += [chunk(b"IDAT", zlib.compress(raw)), chunk(b"IEND", b"")]
    return b"\x89PNG\r\n\x1a\n" + b"".join(chunks)


@pytest.fixture
def model():
    record = IfcModel.objects.create(name="house.ifc", status="ready")
    model_dir(record.id).mkdir(parents=True)
    return record


@pytest.fixture
def post_issue(api):
    def post(model_id, issue, screenshot=None, raw_issue=None):
        parts = {"issue": raw_issue if raw_issue is not None else json.dumps(issue)}
        if screenshot is not None:
            parts["screenshot"] = SimpleUploadedFile(*screenshot) if isinstance(screenshot, tuple) else screenshot
        return api.post(f"/api/v1/models/{model_id}/issues", parts, format="multipart")

    return post
