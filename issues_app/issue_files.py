"""Files of the review records in the model's issues folder: issue images (screenshots, viewpoint snapshots and
bitmaps) and BCF documents, written atomically and removed again when the use case writing them fails."""

from __future__ import annotations

import re
import secrets
from contextlib import contextmanager
from pathlib import Path

from core.errors import NotFound
from core.files import publish_file, temp_path_beside
from issues_app.models import Issue
from issues_app.viewpoints import PendingImage, image_urls, pending_images
from models_app.public import model_dir

# issue images: the screenshot i_<12 hex>.png, viewpoint snapshots and bitmaps i_<12 hex>-<12 hex>.png|jpg
IMAGE_NAME_RE = re.compile(r"^(i_[0-9a-f]{12})(?:\.png|-[0-9a-f]{12}\.(?:png|jpg))$")
DOCUMENTS_FOLDER = "documents"


def issues_folder(model_id: str) -> Path:
    return model_dir(model_id) / "issues"


def image_url(model_id: str, file_name: str) -> str:
    return f"/v1/models/{model_id}/issues/{file_name}"


def issue_image_urls(issue: Issue) -> set[str]:
    """URLs of the images the issue has (its viewpoints' snapshots and bitmaps, its screenshot): the ones a PATCH of
    its viewpoints may name instead of sending the data again."""
    urls = image_urls(issue.viewpoints or [])
    if issue.screenshot:
        urls.add(image_url(issue.model_id, Path(issue.screenshot).name))
    return urls


def image_path(model_id: str, issue_id: str, url: str) -> Path | None:
    """The file behind an image URL of the issue, None when it is not one of its images."""
    prefix = image_url(model_id, "")
    name = url[len(prefix):] if url.startswith(prefix) else ""
    match = IMAGE_NAME_RE.match(name)
    if not match or match.group(1) != issue_id:
        return None
    path = issues_folder(model_id) / name
    return path if path.is_file() else None


def model_image_path(model_id: str, url: str) -> Path | None:
    match = IMAGE_NAME_RE.match(url.rsplit("/", 1)[-1]) if url.startswith(image_url(model_id, "")) else None
    return image_path(model_id, match.group(1), url) if match else None


def document_path(model_id: str, document_guid: str) -> Path:
    return issues_folder(model_id) / DOCUMENTS_FOLDER / document_guid


def issues_folder_for_writing(model_id: str) -> Path:
    folder = issues_folder(model_id)
    try:
        folder.mkdir(exist_ok=True)  # never the model folder itself: a deleted model stays deleted
    except FileNotFoundError:
        raise NotFound(f"model {model_id} not found") from None
    return folder


def store_file(target: Path, write) -> None:
    staged = temp_path_beside(target)
    try:
        with open(staged, "wb") as handle:
            write(handle)
        publish_file(staged, target)
    finally:
        staged.unlink(missing_ok=True)


class FileBatch:
    """Files a use case writes: removed again when it fails, so a failed request leaves no file behind."""

    def __init__(self, model_id: str, issue_id: str):
        self.model_id, self.issue_id = model_id, issue_id
        self.created: list[Path] = []

    def store_image(self, image: PendingImage) -> str:
        target = issues_folder_for_writing(self.model_id) / f"{self.issue_id}-{secrets.token_hex(6)}.{image.image_type}"
        self.created.append(target)
        store_file(target, image.write)
        return image_url(self.model_id, target.name)

    def discard(self) -> None:
        for path in self.created:
            path.unlink(missing_ok=True)


@contextmanager
def file_batch(model_id: str, issue_id: str):
    batch = FileBatch(model_id, issue_id)
    try:
        yield batch
    except BaseException:
        batch.discard()
        raise


def stored_viewpoints(viewpoints: list[dict], batch: FileBatch) -> list[dict]:
    """The viewpoints with their new images stored as files of the issue (URLs instead of data)."""
    for viewpoint in viewpoints:
        for entry in pending_images(viewpoint):
            url = batch.store_image(entry.pop("pending"))
            entry["snapshot_url" if "snapshot_type" in entry else "bitmap_url"] = url
    return viewpoints


def screenshot_of(viewpoints: list[dict]) -> str:
    """The screenshot path of an issue with viewpoints: its first viewpoint's snapshot, when that is a PNG."""
    snapshot = viewpoints[0].get("snapshot") if viewpoints else None
    if snapshot and snapshot["snapshot_type"] == "png":
        return "issues/" + snapshot["snapshot_url"].rsplit("/", 1)[-1]
    return ""


def remove_unused_images(issue: Issue, before: set[str]) -> None:
    for url in before - issue_image_urls(issue):
        path = image_path(issue.model_id, issue.id, url)
        if path is not None:
            path.unlink(missing_ok=True)
