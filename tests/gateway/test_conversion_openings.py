"""Opening subtraction on meshes (models_app/conversion/openings.py): on the real samples each element it cuts
matches what OpenCascade makes of it (volume, surface area, bounds), each element it refuses has a reason, and the
conversion meshes only the refused ones with OpenCascade; on hand-made solids, the cases that make mesh booleans go
wrong (openings flush with the wall, openings of several touching solids, bodies that are not closed) are cut right
or refused."""

import io
import struct

import numpy as np
import pytest

from models_app.conversion import geometry
from models_app.conversion.openings import EMPTY, Mesh, _grown, _has_film, _roots, _shells, _solid, cut
from models_app.conversion.voids import modelling_precision, openings_of, subtractions
from tests.helpers import sample
from tests.issues.bcf_xml import TESTCASES_DIR

pytestmark = pytest.mark.heavy

LIBRARY = "hybrid-cgal-simple-opencascade"
PRECISION = 1e-5


def box(low, high, material: int = 0) -> Mesh:
    import manifold3d

    size = np.subtract(high, low)
    mesh = manifold3d.Manifold.cube(tuple(size)).translate(tuple(low)).to_mesh64()
    faces = np.asarray(mesh.tri_verts).astype(np.int64)
    return Mesh(np.asarray(mesh.vert_properties)[:, :3].copy(), faces, np.full(len(faces), material, dtype=np.int32))


def joined(*meshes: Mesh) -> Mesh:
    """One mesh of several shells, each with its own vertices (as ifcopenshell emits the items of a representation)."""
    offsets = np.cumsum([0] + [len(m.vertices) for m in meshes[:-1]])
    return Mesh(np.concatenate([m.vertices for m in meshes]), np.concatenate([m.faces + o for m, o in zip(meshes, offsets)]),
                np.concatenate([m.material_ids for m in meshes]))


def volume_area_bounds(mesh: Mesh) -> tuple[float, float, np.ndarray]:
    corners = mesh.vertices[mesh.faces]
    volume = np.einsum("ij,ij->i", corners[:, 0], np.cross(corners[:, 1], corners[:, 2])).sum() / 6
    area = np.linalg.norm(np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0]), axis=1).sum() / 2
    return float(volume), float(area), np.r_[mesh.vertices.min(axis=0), mesh.vertices.max(axis=0)]


WALL = box((0, 0, 0), (4, 0.3, 3))
# the wall's six faces, less a 1 x 1.5 m hole on both faces, plus the hole's four reveals
FLUSH_CUT_AREA = 2 * (4 * 3 + 4 * 0.3 + 0.3 * 3) - 2 * 1.5 + 2 * (1 + 1.5) * 0.3


def test_an_opening_flush_with_both_faces_of_the_wall_cuts_through_without_a_film():
    result = cut(WALL, [box((1, 0, 0.5), (2, 0.3, 2))], PRECISION)
    volume, area, bounds = volume_area_bounds(result)
    assert volume == pytest.approx(4 * 0.3 * 3 - 1 * 0.3 * 1.5, abs=1e-4)
    assert area == pytest.approx(FLUSH_CUT_AREA, abs=1e-3)  # no film over the hole
    assert np.allclose(bounds, [0, 0, 0, 4, 0.3, 3])
    assert not _has_film(result.vertices[result.faces], PRECISION)


def test_an_opening_of_two_solids_sharing_a_face_cuts_as_their_union():
    # AC20's window openings: two extrusions meeting inside the wall, meshed as two shells
    opening = joined(box((1, -0.1, 0.5), (2, 0.15, 2)), box((1, 0.15, 0.5), (2, 0.4, 2)))
    assert len(_shells(opening.faces)) == 2
    volume, _, _ = volume_area_bounds(cut(WALL, [opening], PRECISION))
    assert volume == pytest.approx(4 * 0.3 * 3 - 1 * 0.3 * 1.5, abs=1e-4)


def test_a_niche_takes_out_only_its_own_depth_and_an_opening_elsewhere_takes_out_nothing():
    niche = box((1, 0.1, 0.5), (2, 0.3, 2))
    assert volume_area_bounds(cut(WALL, [niche], PRECISION))[0] == pytest.approx(3.6 - 1 * 0.2 * 1.5, abs=1e-4)
    elsewhere = box((10, 0, 0), (11, 0.3, 1))
    assert np.array_equal(cut(WALL, [elsewhere], PRECISION).vertices, WALL.vertices)
    not_closed = Mesh(WALL.vertices, WALL.faces[1:], WALL.material_ids[1:])
    assert cut(not_closed, [elsewhere], PRECISION) is None  # OpenCascade changes such a body even so


def test_the_cut_faces_take_the_material_of_their_shell():
    two_materials = joined(box((0, 0, 0), (4, 0.3, 3), material=0), box((0, 0, 3), (4, 0.3, 3.5), material=1))
    result = cut(two_materials, [box((1, 0, 2.5), (2, 0.3, 3.2))], PRECISION)
    assert set(result.material_ids.tolist()) == {0, 1}
    upper = result.vertices[result.faces[result.material_ids == 1]].reshape(-1, 3)
    assert upper[:, 2].min() == pytest.approx(3, abs=1e-4)


@pytest.mark.parametrize("body, openings", [
    (Mesh(WALL.vertices, WALL.faces[1:], WALL.material_ids[1:]), [box((1, 0, 0.5), (2, 0.3, 2))]),  # body not closed
    (Mesh(WALL.vertices, WALL.faces, np.r_[1, WALL.material_ids[1:]]), [box((1, 0, 0.5), (2, 0.3, 2))]),  # two materials
    (WALL, [Mesh(WALL.vertices, WALL.faces[::-1][1:], WALL.material_ids[1:])]),  # opening not closed
    (WALL, [EMPTY]),  # an opening ifcopenshell could not mesh
    (WALL, [box((-1, -1, -1), (5, 1, 4))]),  # nothing left
    (WALL, [Mesh(np.r_[[[np.nan] * 3], WALL.vertices[1:]], WALL.faces, WALL.material_ids)]),  # not a number
    (Mesh(np.r_[[[np.nan] * 3], WALL.vertices[1:]], WALL.faces, WALL.material_ids), [box((1, 0, 0.5), (2, 0.3, 2))]),
    (Mesh(WALL.vertices * 1e200, WALL.faces, WALL.material_ids), [box((1, 0, 0.5), (2, 0.3, 2))]),  # cross products overflow
    (WALL, [box((-1e5, 0, 0.5), (2, 0.3, 2))]),  # an opening reaching 100 km off its wall
    (Mesh(WALL.vertices, WALL.faces, np.zeros(0, dtype=np.int32)), [box((1, 0, 0.5), (2, 0.3, 2))]),  # no materials
], ids=["open body", "mixed materials", "open opening", "unmeshed opening", "empty result", "NaN opening", "NaN body",
        "overflowing body", "opening far away", "no material ids"])
def test_what_cannot_be_vouched_for_is_refused(body, openings):
    assert cut(body, openings, PRECISION) is None


def test_a_model_whose_precision_is_coarser_than_a_millimetre_is_left_to_opencascade():
    assert cut(WALL, [box((1, 0, 0.5), (2, 0.3, 2))], 1e-3) is not None
    assert cut(WALL, [box((1, 0, 0.5), (2, 0.3, 2))], 2e-3) is None



def placed(mesh: Mesh, degrees: float, offset) -> Mesh:
    """The mesh turned about Z and moved, as a georeferenced model places its walls."""
    angle = np.radians(degrees)
    turn = np.array([[np.cos(angle), -np.sin(angle), 0], [np.sin(angle), np.cos(angle), 0], [0, 0, 1]])
    return Mesh(mesh.vertices @ turn.T + offset, mesh.faces, mesh.material_ids)


@pytest.mark.parametrize("offset", [(0, 0, 0), (1e6, 1e6, 0), (4.2e5, 5.7e6, 120)], ids=["at the origin", "1,000 km out", "UTM"])
def test_an_opening_face_within_the_precision_of_the_wall_face_cuts_through_wherever_the_wall_stands(offset):
    """A coarse model (0.1 mm): an opening whose face is 30 um inside the wall's face cuts through, as OpenCascade's
    fuzzy boolean does; a fine one (ifcopenshell's floor): the 4 um film left is refused, on a wall turned by 30
    degrees and placed where a georeferenced model puts it as much as at the origin."""
    wall = placed(WALL, 30, offset)
    recessed = placed(box((1, 3e-5, 0.5), (2, 0.3, 2)), 30, offset)
    volume, area, _ = volume_area_bounds(cut(wall, [recessed], 1e-4).moved(-np.asarray(offset, dtype=float)))
    # the hole is 0.1 mm wider on every side (grown by the precision)
    assert volume == pytest.approx(3.6 - 0.45, abs=3e-4) and area == pytest.approx(FLUSH_CUT_AREA, abs=2e-3)
    assert cut(wall, [placed(box((1, 1.4e-5, 0.5), (2, 0.3, 2)), 30, offset)], 1e-7) is None


def test_connected_parts_are_found_whatever_the_numbering():
    def union_find(first, second, count):
        parent = list(range(count))

        def root(x):
            while parent[x] != x:
                x = parent[x]
            return x

        for a, b in zip(first.tolist(), second.tolist()):
            parent[max(root(a), root(b))] = min(root(a), root(b))
        return np.array([root(x) for x in range(count)])

    rng = np.random.default_rng(7)
    for _ in range(100):
        count, edges = int(rng.integers(1, 200)), int(rng.integers(0, 250))
        first, second = rng.integers(0, count, edges), rng.integers(0, count, edges)
        found, expected = _roots(first, second, count), union_find(first, second, count)
        assert len(np.unique(np.c_[found, expected], axis=0)) == len(np.unique(found)) == len(np.unique(expected))
    # a strip of 200,000 triangles numbered at random: one shell (label propagation alone would take ~10^5 rounds)
    numbering = rng.permutation(200_002)
    strip = numbering[np.c_[np.arange(200_000), np.arange(1, 200_001), np.arange(2, 200_002)]]
    assert len(_shells(strip)) == 1 and len(_shells(np.r_[strip, strip + 200_002])) == 2


def test_a_grown_box_is_the_box_grown_on_every_side():
    points, welded = np.unique(WALL.vertices[WALL.faces.reshape(-1)], axis=0, return_inverse=True)
    grown = _grown(points, welded.reshape(-1, 3), 0.01)
    assert np.allclose(np.sort(np.unique(grown[:, 0])), [-0.01, 4.01])
    assert np.allclose(np.sort(np.unique(grown[:, 1])), [-0.01, 0.31])
    assert np.allclose(np.sort(np.unique(grown[:, 2])), [-0.01, 3.01])


def test_a_film_is_two_faces_of_one_plane_facing_opposite_ways():
    up = np.array([[[0, 0, 1], [1, 0, 1], [0, 1, 1]]], dtype=float)
    down = up[:, ::-1] + [0, 0, 1e-9]
    assert _has_film(np.concatenate([up, down]), PRECISION)
    assert not _has_film(WALL.vertices[WALL.faces], PRECISION)
    assert _solid(WALL.vertices, WALL.faces).volume() == pytest.approx(3.6)


def test_parts_of_an_element_get_its_openings():
    import ifcopenshell
    import ifcopenshell.guid

    ifc = ifcopenshell.file(schema="IFC4")

    def guid():
        return ifcopenshell.guid.new()

    wall, part, opening = ifc.createIfcWall(guid()), ifc.createIfcBuildingElementPart(guid()), ifc.createIfcOpeningElement(guid())
    ifc.createIfcRelVoidsElement(guid(), None, None, None, wall, opening)
    ifc.createIfcRelAggregates(guid(), None, None, None, wall, [part])
    assert openings_of(part) == [opening] and openings_of(wall) == [opening] and openings_of(opening) == []
    assert subtractions(ifc) == {wall.id(): [opening], part.id(): [opening]}


def _shapes_of(ifc, products, **settings) -> dict:
    return {shape.id: shape for shape in geometry._shapes(
        ifc, geometry._settings(**settings), LIBRARY, 1, lambda fraction: None, include=products)}


def _meshes(ifc, products, **settings) -> dict[int, Mesh]:
    return {product: Mesh.of_geometry(shape.geometry) for product, shape in _shapes_of(ifc, products, **settings).items()}


def _cut_on_meshes(ifc) -> tuple[dict[int, Mesh], dict[int, Mesh | None]]:
    """Each element with openings: its body meshed without them, and openings.cut of it (None where refused)."""
    subtracted = subtractions(ifc)
    bodies = _meshes(ifc, [ifc.by_id(product) for product in subtracted], **{"disable-opening-subtractions": True})
    openings = _meshes(ifc, list({o for found in subtracted.values() for o in found}))
    precision = modelling_precision(ifc)
    return bodies, {product: cut(body, [openings.get(o.id(), EMPTY) for o in subtracted[product]], precision)
                    for product, body in bodies.items()}


def model_file(name: str):
    if name != "Architectural.ifc":
        return sample(name)
    if not (TESTCASES_DIR / name).exists():
        pytest.skip(f"{TESTCASES_DIR / name} not available")
    return TESTCASES_DIR / name


@pytest.mark.parametrize("name", ["AC20-FZK-Haus.ifc", "duplex.ifc", "IfcOpenHouse_IFC4.ifc", "Architectural.ifc"])
def test_on_the_samples_every_cut_matches_opencascade_and_every_refusal_has_a_reason(name):
    """The IFC samples and the BCF test cases' model (Revit); only duplex has bodies that are not closed."""
    import ifcopenshell

    ifc = ifcopenshell.open(str(model_file(name)))
    bodies, cuts = _cut_on_meshes(ifc)
    opencascade = _meshes(ifc, [ifc.by_id(product) for product in bodies])
    assert bodies and set(bodies) == set(opencascade)
    refused = [product for product, result in cuts.items() if result is None]
    for product, result in cuts.items():
        if result is None:
            continue
        volume, area, bounds = volume_area_bounds(result)
        expected_volume, expected_area, expected_bounds = volume_area_bounds(opencascade[product])
        assert volume == pytest.approx(expected_volume, rel=1e-4, abs=1e-6), ifc.by_id(product)
        assert area == pytest.approx(expected_area, rel=1e-3, abs=1e-4), ifc.by_id(product)
        assert np.abs(bounds - expected_bounds).max() < 1e-4, ifc.by_id(product)
    for product in refused:  # the reason: a shell of the body is not a closed solid
        body = bodies[product]
        assert any(_solid(body.vertices, body.faces[shell]) is None for shell in _shells(body.faces)), ifc.by_id(product)
    assert len(refused) < len(bodies)
    if name != "duplex.ifc":  # duplex has 8 furnishing elements whose bodies are not closed
        assert refused == []


@pytest.mark.parametrize("name", ["AC20-FZK-Haus.ifc", "duplex.ifc"])
def test_the_conversion_meshes_only_refused_elements_with_their_openings_in_opencascade(name, monkeypatch):
    import ifcopenshell
    import ifcopenshell.geom

    ifc = ifcopenshell.open(str(sample(name)))
    with_openings = []
    create_shape = ifcopenshell.geom.create_shape

    def recording(settings, product, **kwargs):
        with_openings.append(product.GlobalId)
        return create_shape(settings, product, **kwargs)

    monkeypatch.setattr(ifcopenshell.geom, "create_shape", recording)
    written = geometry.write_geometry(ifc, io.BytesIO(), 1)
    bodies, cuts = _cut_on_meshes(ifc)
    expected = {ifc.by_id(product).GlobalId for product, result in cuts.items() if result is None}
    assert sorted(with_openings) == sorted(expected)
    assert written > len(bodies)


def test_an_element_whose_booleans_fail_keeps_its_body(monkeypatch):
    import ifcopenshell
    import ifcopenshell.geom

    ifc = ifcopenshell.open(str(sample("duplex.ifc")))
    written = geometry.write_geometry(ifc, io.BytesIO(), 1)

    def failing(settings, product, **kwargs):
        raise RuntimeError(f"Failed to process shape {product}")

    monkeypatch.setattr(ifcopenshell.geom, "create_shape", failing)
    assert geometry.write_geometry(ifc, io.BytesIO(), 1) == written


def test_a_failure_inside_the_mesh_subtraction_leaves_the_element_to_opencascade(monkeypatch):
    import ifcopenshell
    import ifcopenshell.geom

    ifc = ifcopenshell.open(str(sample("AC20-FZK-Haus.ifc")))
    written = geometry.write_geometry(ifc, io.BytesIO(), 1)
    with_openings = []
    create_shape = ifcopenshell.geom.create_shape

    def recording(settings, product, **kwargs):
        with_openings.append(product.id())
        return create_shape(settings, product, **kwargs)

    def failing(body, openings, precision):
        raise np.linalg.LinAlgError("SVD did not converge")

    monkeypatch.setattr(ifcopenshell.geom, "create_shape", recording)
    monkeypatch.setattr(geometry.openings, "cut", failing)
    assert geometry.write_geometry(ifc, io.BytesIO(), 1) == written
    assert sorted(with_openings) == sorted(subtractions(ifc))


def read_records(data: bytes) -> tuple[dict, dict, dict]:
    """The geometry records (geometry.py's format): materials {id: (r, g, b, opacity)}, geometries {id: (positions
    (n, 3), indices (m, 3))} of triangles, entities {GlobalId: [(geometry id, material id)]}."""
    assert data[:8] == geometry.MAGIC
    materials, geometries, entities, at = {}, {}, {}, 8
    while data[at] != geometry.END:
        tag, at = data[at], at + 1
        if tag == geometry.MATERIAL:
            index, *values = struct.unpack_from("<I6d", data, at)
            materials[index], at = tuple(values[:4]), at + 52
        elif tag == geometry.GEOMETRY:
            index, primitive, count = struct.unpack_from("<IBI", data, at)
            positions, at = np.frombuffer(data, "<f4", count, at + 9).reshape(-1, 3), at + 9 + 4 * count
            (count,) = struct.unpack_from("<I", data, at)
            at += 4 + 4 * count  # normals
            (count,) = struct.unpack_from("<I", data, at)
            indices, at = np.frombuffer(data, "<u4", count, at + 4), at + 4 + 4 * count
            if primitive == geometry.TRIANGLES:
                geometries[index] = (positions.astype(float), indices.reshape(-1, 3).astype(np.int64))
        else:
            assert tag == geometry.ENTITY
            (length,) = struct.unpack_from("<H", data, at)
            name, at = data[at + 2:at + 2 + length].decode(), at + 2 + length + 16 * 8
            (count,) = struct.unpack_from("<I", data, at)
            entities[name] = [struct.unpack_from("<Ii", data, at + 4 + 8 * i) for i in range(count)]
            at += 4 + 8 * count
    return materials, geometries, entities


@pytest.mark.parametrize("name", ["AC20-FZK-Haus.ifc", "duplex.ifc"])
def test_what_the_conversion_writes_for_a_cut_element_is_opencascades_solid_in_its_materials(name):
    """The records themselves, decoded: each element with openings has the volume, area and bounds of OpenCascade's
    mesh of it, in the same colours."""
    import ifcopenshell

    ifc = ifcopenshell.open(str(sample(name)))
    records = io.BytesIO()
    geometry.write_geometry(ifc, records, 1)
    materials, geometries, entities = read_records(records.getvalue())
    hosts = [ifc.by_id(product) for product in subtractions(ifc)]
    opencascade = {ifc.by_id(product).GlobalId: shape for product, shape in _shapes_of(ifc, hosts).items()}
    assert opencascade and set(opencascade) <= set(entities)
    for guid, shape in opencascade.items():
        parts = [(geometries[g], m) for g, m in entities[guid] if g in geometries]
        written = joined(*(Mesh(positions, indices, np.zeros(len(indices))) for (positions, indices), _ in parts))
        volume, area, bounds = volume_area_bounds(written)
        expected_volume, expected_area, expected_bounds = volume_area_bounds(Mesh.of_geometry(shape.geometry))
        assert volume == pytest.approx(expected_volume, rel=1e-3, abs=1e-5), guid
        assert area == pytest.approx(expected_area, rel=1e-3, abs=1e-4), guid
        assert np.abs(bounds - expected_bounds).max() < 1e-3, guid
        styles = shape.geometry.materials
        used = {int(i) for i in np.frombuffer(shape.geometry.material_ids_buffer, "<i4")}
        assert {_rgb(materials[m][:3]) for _, m in parts} == {_rgb(styles[i].get_color().components) for i in used}, guid


def _rgb(components) -> tuple:
    return tuple(round(float(c), 6) for c in components)
