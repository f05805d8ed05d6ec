"""The format of clash-geometry.bin, the triangle mesh of every element of a model: written by a conversion
(models_app.conversion.clash_geometry), read by the clash engine (coordination_app.engine.geometry). Django-free
and outside models_app.conversion, so that the engine may import it (.importlinter) in the clash run's sandbox.

Little-endian, every record starting at a multiple of 8 bytes from the start of the file:
  magic  8 bytes b"CLASHG01"
  element record:
    u8 tag 1, u8 length of the IFC class name, u16 length of the GlobalId, u32 vertex count nv, u32 triangle count nt,
    utf-8 GlobalId, ascii class name, zero padding to a multiple of 8,
    f64[3] origin, f64[6] bounds (min x y z, max x y z, world frame),
    f32[3 nv] vertices relative to the origin, i32[3 nt] triangles (vertex indices), zero padding to a multiple of 8
  end record: u8 tag 0, 3 zero bytes, u32 number of element records
"""

from __future__ import annotations

import struct

MAGIC = b"CLASHG01"
ELEMENT, END = 1, 0
HEADER = struct.Struct("<BBHII")  # tag, class length, GlobalId length, vertex count, triangle count
END_RECORD = struct.Struct("<B3xI")
PLACE_DOUBLES = 9  # origin, bounds
PLACE = struct.Struct(f"<{PLACE_DOUBLES}d")
ALIGN = 8


def padding(size: int) -> int:
    """Zero bytes after `size` bytes so the next field starts at a multiple of ALIGN."""
    return -size % ALIGN
