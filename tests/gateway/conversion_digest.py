"""A digest of one conversion's outputs that does not depend on the order the multi-threaded geometry iterator
delivers elements in: the exact bytes of metadata.json and element-values.json, and per XKT entity its meshes as
(material attributes, index count, vertex count), except for the entities given as cut (elements with openings,
whose meshes come from the opening subtraction: tests/gateway/test_conversion_openings.py compares them with
OpenCascade's). `python -m tests.gateway.conversion_digest IFC DIR` prints it for the conversion of IFC in DIR."""

from __future__ import annotations

import hashlib
import json
import struct
import sys
from pathlib import Path

XKT_ARRAYS = (
    "metadata textureData eachTextureDataPortion eachTextureAttributes positions normals colors uvs indices edgeIndices "
    "eachTextureSetTextures matrices reusedGeometriesDecodeMatrix eachGeometryPrimitiveType eachGeometryAxisLabel "
    "eachGeometryPositionsPortion eachGeometryNormalsPortion eachGeometryColorsPortion eachGeometryUVsPortion "
    "eachGeometryIndicesPortion eachGeometryEdgeIndicesPortion eachMeshGeometriesPortion eachMeshMatricesPortion "
    "eachMeshTextureSet eachMeshMaterialAttributes eachEntityId eachEntityMeshesPortion eachTileAABB eachTileEntitiesPortion"
).split()


def xkt_arrays(data: bytes) -> dict[str, bytes]:
    """The arrays of an uncompressed XKT v11+ file (header: version, then offset and length of each array)."""
    spans = [struct.unpack_from("<II", data, (1 + 2 * index) * 4) for index in range(len(XKT_ARRAYS))]
    return {name: data[start:start + length] for name, (start, length) in zip(XKT_ARRAYS, spans)}


def _u32(raw: bytes) -> tuple[int, ...]:
    return struct.unpack(f"<{len(raw) // 4}I", raw)


def entity_meshes(data: bytes) -> dict[str, list]:
    """entity id -> sorted [(material attributes hex, index count, vertex count)] of its meshes."""
    arrays = xkt_arrays(data)
    ids = json.loads(arrays["eachEntityId"])
    first_mesh = _u32(arrays["eachEntityMeshesPortion"])
    mesh_geometry = _u32(arrays["eachMeshGeometriesPortion"])
    materials = arrays["eachMeshMaterialAttributes"]
    index_start, position_start = _u32(arrays["eachGeometryIndicesPortion"]), _u32(arrays["eachGeometryPositionsPortion"])
    index_total, position_total = len(arrays["indices"]) // 4, len(arrays["positions"]) // 2

    def span(starts, geometry, total):
        return (starts[geometry + 1] if geometry + 1 < len(starts) else total) - starts[geometry]

    meshes = {}
    for index, entity in enumerate(ids):
        last = first_mesh[index + 1] if index + 1 < len(ids) else len(mesh_geometry)
        meshes[entity] = sorted(
            (materials[mesh * 6:mesh * 6 + 6].hex(), span(index_start, mesh_geometry[mesh], index_total),
             span(position_start, mesh_geometry[mesh], position_total) // 3)
            for mesh in range(first_mesh[index], last)
        )
    return meshes


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def digest(out_dir: Path, cut: set[str] = frozenset()) -> dict:
    values = out_dir / "element-values.json"
    meshes = entity_meshes((out_dir / "model.xkt").read_bytes())
    uncut = {entity: entity_meshes for entity, entity_meshes in meshes.items() if entity not in cut}
    return {
        "metadataSHA256": _sha256((out_dir / "metadata.json").read_bytes()),
        "elementValuesSHA256": _sha256(values.read_bytes()) if values.exists() else None,
        "entities": len(meshes),
        "entityIdsSHA256": _sha256("\n".join(sorted(meshes)).encode()),
        "cutEntities": len(meshes) - len(uncut),
        "entityMeshesSHA256": _sha256(json.dumps(uncut, sort_keys=True).encode()),
    }


def cut_entities(ifc: Path) -> set[str]:
    """The GlobalIds of the elements of the IFC that have openings subtracted (none when ifcopenshell cannot read it)."""
    import ifcopenshell

    from models_app.conversion.voids import subtractions

    try:
        model = ifcopenshell.open(str(ifc))
    except ifcopenshell.SchemaError:
        return set()
    return {model.by_id(product).GlobalId for product in subtractions(model)}


if __name__ == "__main__":
    print(json.dumps(digest(Path(sys.argv[2]), cut_entities(Path(sys.argv[1]))), indent=2))
