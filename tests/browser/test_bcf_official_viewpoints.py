"""buildingSMART's official BCF 3.0 viewpoints, opened in the web client on their model (Architectural.ifc converted by
the real stack), against the archives' own data and snapshots: the camera (eye, direction, up, projection, and the
rendered vertical extent: FieldOfView, or ViewToWorldScale as the visible height in metres), the visible and selected
elements, and the rendered picture against the archive's snapshot. Pictures are compared by the silhouette of the
model (what differs from the background, row by row): after cropping both to the same aspect, its bounding box
relative to the picture's height, so a view zoomed in or out (or moved) fails while colours, edges and lighting may
differ between the tools."""

import base64
import io
import math
import zipfile
from xml.etree import ElementTree

import numpy as np
import pytest
from PIL import Image

from tests.browser.conftest import ARTIFACTS, open_tab, upload_ready
from tests.issues import bcf_xml

pytestmark = pytest.mark.e2e

# the largest differences between the silhouettes that still count as the same view: the bounding box's size (ratio)
# and position (in picture heights); the snapshots show elements of another (MEP) model as well, and their tools
# draw the model somewhat differently
SIZE_RATIO = 1.25
OFFSET = 0.08
# snapshots that are not of their own viewpoint's camera: only the camera and the elements are compared
NOT_OF_THEIR_CAMERA = {
    # its description: "The viewpoint camera was manually created"; the snapshot is rotated against that exactly
    # top-down camera (up -X) and shows about twice the ViewToWorldScale
    "orthogonal_camera.bcf",
}

# the viewpoint as the view applied it: camera, rendered vertical extent, visible and selected objects, and the
# visible / selected sets that the viewpoint's own data asks for, read independently of the viewer's BCF code
VIEW_STATE_JS = """(viewpoint) => {
  const viewer = viewerApp.view3d.viewer, scene = viewer.scene, camera = viewer.camera;
  const m = camera.project.matrix;
  const objectsOf = (components) => [...new Set((components || []).flatMap((c) => {
    const id = c.ifc_guid;
    if (scene.objects[id]) return [id];
    return viewer.metaScene.metaObjects[id] ? viewer.metaScene.getObjectIDsInSubtree(id).filter((i) => scene.objects[i]) : [];
  }))];
  const components = viewpoint.components || {};
  const visibility = components.visibility || { default_visibility: true };
  const hints = visibility.view_setup_hints || {};
  const spaces = viewer.metaScene.getObjectIDsByType("IfcSpace").filter((id) => scene.objects[id]);
  const exceptions = new Set(objectsOf(visibility.exceptions));
  let visible;
  if (visibility.default_visibility) {
    const hidden = new Set([...exceptions, ...(hints.spaces_visible ? [] : spaces)]);
    visible = scene.objectIds.filter((id) => !hidden.has(id));
  } else {
    visible = [...new Set([...exceptions, ...(hints.spaces_visible ? spaces : [])])];
  }
  return {
    eye: Array.from(camera.eye), look: Array.from(camera.look), up: Array.from(camera.up), projection: camera.projection,
    // the projection matrix's vertical scale: 1 / tan(fovy / 2) in perspective, 2 / visible height in ortho
    verticalScale: m[5],
    visible: scene.visibleObjectIds.slice().sort(), selected: scene.selectedObjectIds.slice().sort(),
    expectedVisible: visible.sort(), expectedSelected: objectsOf(components.selection).sort(),
    picture: viewerApp.view3d.snapshotDataURL(),
  };
}"""


def z_to_y(vector: dict) -> np.ndarray:
    """A BCF (IFC, Z up) point or direction in the viewer's Y-up world, as xeokit's BCFViewpointsPlugin maps it."""
    return np.array([vector["x"], vector["z"], -vector["y"]])


def unit(vector) -> np.ndarray:
    vector = np.asarray(vector, dtype=float)
    return vector / np.linalg.norm(vector)


def official_viewpoints() -> list[tuple[str, str, str, bytes, bool]]:
    """(archive, topic title, viewpoint guid, snapshot PNG, whether the topic shows Architectural.ifc: its header
    names no file, or that one (as Architectural.ifc or BCF-ARK)) of every viewpoint of the official archives."""
    found = []
    for path in bcf_xml.testcases():
        with zipfile.ZipFile(path) as archive:
            for name in archive.namelist():
                if not name.endswith("/markup.bcf"):
                    continue
                folder = name.rsplit("/", 1)[0]
                markup = ElementTree.fromstring(archive.read(name))
                files = [file.findtext("Filename") for file in markup.iter("File")]
                topic = markup.find("Topic")
                for view_point in topic.iter("ViewPoint"):
                    snapshot = archive.read(f"{folder}/{view_point.findtext('Snapshot')}")
                    found.append((path.name, topic.findtext("Title"), view_point.get("Guid"), snapshot, not files or any(name in ("Architectural.ifc", "BCF-ARK") for name in files)))
    return found


def silhouette(picture: np.ndarray) -> np.ndarray:
    """What differs from the background: each row's background is its colour at the left or right border (the
    snapshots have vertical gradients), the one that continues the row above; a row whose borders are both model
    keeps the background of the row above."""
    rows = picture.astype(float)
    background = np.empty((rows.shape[0], 3))
    current = (rows[0, 0] + rows[0, -1]) / 2
    for y, row in enumerate(rows):
        candidates = [row[:3].mean(axis=0), row[-3:].mean(axis=0)]
        best = min(candidates, key=lambda colour: np.abs(colour - current).sum())
        if np.abs(best - current).sum() < 24:
            current = best
        background[y] = current
    return np.abs(rows - background[:, None, :]).sum(axis=2) > 45


def same_aspect(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Both pictures cropped (centred) to the narrower aspect: with the same vertical extent, the same view."""
    aspect = min(a.shape[1] / a.shape[0], b.shape[1] / b.shape[0])

    def crop(picture):
        width = round(aspect * picture.shape[0])
        left = (picture.shape[1] - width) // 2
        return picture[:, left:left + width]

    return crop(a), crop(b)


def box(mask: np.ndarray) -> tuple[float, float, float, float] | None:
    """The silhouette's bounding box in picture heights: centre x (from the middle), centre y, width, height; None
    when the picture shows (next to) nothing."""
    ys, xs = np.nonzero(mask)
    height, width = mask.shape
    if len(xs) < 0.001 * mask.size:
        return None
    return ((xs.min() + xs.max()) / 2 - width / 2) / height, (ys.min() + ys.max()) / 2 / height, (xs.max() - xs.min()) / height, (ys.max() - ys.min()) / height


def picture_of(png: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB"))


def picture_difference(rendered: bytes, snapshot: bytes) -> dict | None:
    """How the rendered silhouette's box differs from the snapshot's; None when the rendered picture is empty."""
    ours, theirs = same_aspect(picture_of(rendered), picture_of(snapshot))
    mine, reference = box(silhouette(ours)), box(silhouette(theirs))
    assert reference is not None, "no model in the snapshot"
    if mine is None:
        return None
    return {
        "offset": max(abs(mine[0] - reference[0]), abs(mine[1] - reference[1])),
        "size": max(max(m, r) / max(min(m, r), 1e-6) for m, r in zip(mine[2:], reference[2:])),
        "ours": [round(v, 3) for v in mine], "snapshot": [round(v, 3) for v in reference],
    }


@pytest.fixture(scope="module")
def architectural(web_stack):
    bcf_xml.require_testcases()
    return upload_ready(web_stack, bcf_xml.TESTCASES_DIR / "Architectural.ifc")


def test_the_official_viewpoints_show_what_their_snapshots_show(page, web_stack, architectural):
    viewpoints = official_viewpoints()
    assert len(viewpoints) >= 16
    for archive in sorted({archive for archive, *_ in viewpoints}):
        report = web_stack.api("POST", f"/api/v1/models/{architectural}/issues/bcf", files={"file": (archive, (bcf_xml.TESTCASES_DIR / archive).read_bytes())}).json()
        assert report["code"] == 0 and report["data"]["warnings"] == [], report  # every archive is for this model
        assert not any(entry["notes"] for entry in report["data"]["imported"]), report
    # the MEP topic of "Topics with different models visible" shows MEP.ifc, which is not loaded: no picture to compare
    assert [title for _, title, _, _, own in viewpoints if not own] == ["Topics with different model visible - MEP"]
    issues = {issue["topicGuid"]: issue for issue in web_stack.api("GET", f"/api/v1/models/{architectural}/issues").json()["data"]}
    by_guid = {vp["guid"]: (issue, vp) for issue in issues.values() for vp in issue["viewpoints"]}

    page.set_viewport_size({"width": 2000, "height": 900})  # a landscape canvas: xeokit's Ortho scale is its width then
    open_tab(page, web_stack, architectural, "issues")
    assert page.evaluate("(({ clientWidth, clientHeight }) => clientWidth / clientHeight)(viewerApp.view3d.viewer.scene.canvas.canvas)") > 1.3
    failures, pictures = [], []
    for archive, title, guid, snapshot, own in viewpoints:
        issue, viewpoint = by_guid[guid]
        assert issue["title"] == title and issue["viewpoints"][0]["guid"] == guid
        page.click(f"[data-testid=issue-item][data-issue-id={issue['id']}] [data-testid=fly-to]")
        page.wait_for_timeout(300)
        state = page.evaluate(VIEW_STATE_JS, viewpoint)
        problems = []

        perspective = viewpoint["perspective_camera"]
        camera = perspective or viewpoint["orthogonal_camera"]
        if state["projection"] != ("perspective" if perspective else "ortho"):
            problems.append(f"projection {state['projection']}")
        if not np.allclose(state["eye"], z_to_y(camera["camera_view_point"]), atol=1e-6):
            problems.append(f"eye {state['eye']}")
        if not np.allclose(unit(np.subtract(state["look"], state["eye"])), unit(z_to_y(camera["camera_direction"])), atol=1e-6):
            problems.append("direction")
        if not np.allclose(unit(state["up"]), unit(z_to_y(camera["camera_up_vector"])), atol=1e-6):
            problems.append("up")
        if perspective:
            fov = math.degrees(2 * math.atan(1 / state["verticalScale"]))
            if abs(fov - perspective["field_of_view"]) > 0.01:
                problems.append(f"vertical field of view {fov:.3f}, not {perspective['field_of_view']}")
        else:
            height = 2 / state["verticalScale"]
            if abs(height - camera["view_to_world_scale"]) > 1e-3 * camera["view_to_world_scale"]:
                problems.append(f"visible height {height:.3f} m, not its ViewToWorldScale {camera['view_to_world_scale']}")
        if state["visible"] != state["expectedVisible"]:
            problems.append(f"visible: {len(state['visible'])} objects, not the {len(state['expectedVisible'])} it asks for")
        if state["selected"] != state["expectedSelected"]:
            problems.append(f"selected {state['selected']}, not {state['expectedSelected']}")

        rendered = base64.b64decode(state["picture"].split(",", 1)[1])
        pictures.append((archive, guid, rendered))
        if own and archive not in NOT_OF_THEIR_CAMERA:
            difference = picture_difference(rendered, snapshot)
            if difference is None:
                problems.append("an empty picture")
            elif difference["size"] > SIZE_RATIO or difference["offset"] > OFFSET:
                problems.append(f"picture unlike the snapshot: {difference}")
        if problems:
            failures.append(f"{archive} ({title}): {'; '.join(problems)}")
    for archive, guid, rendered in pictures:  # beside the page's screenshots, to compare with the snapshots by eye
        (ARTIFACTS / f"official-viewpoint-{archive}-{guid[:8]}.png").write_bytes(rendered)
    assert failures == [], "\n".join(failures)
