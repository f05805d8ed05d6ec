#!/usr/bin/env node
// The XKT stage of a conversion, run inside the conversion sandbox with its files as /proc/self/fd/N paths:
//   node convert.mjs --geometry records.bin --metadata metadata.json --output model.xkt
//     reads the geometry records written by models_app/conversion/geometry.py one at a time (a bounded buffer, never
//     the whole file) into an XKTModel with xeokit-convert's own API (createGeometry/createMesh/createEntity, as its
//     glTF parser does with a GLB), finalizes it and writes the XKT with the metadata embedded;
//   node convert.mjs --source model.ifc --output model.xkt [--metadata-out metadata.json]
//     the fallback for schemas ifcopenshell cannot open: xeokit-convert's convert2xkt with its web-ifc parser (loaded
//     only then, from its own chunk).
// Progress goes to stdout as JSON lines {"phase", "percent"}. The worker runs dist/convert.mjs, this file bundled with
// xeokit-convert by build.mjs (make setup).
import fs from "node:fs";
import { parseArgs } from "node:util";
// by file, not through the package's index, which would load every parser (loaders.gl, web-ifc glue, ...) at start
import { XKTModel } from "./node_modules/@xeokit/xeokit-convert/src/XKTModel/XKTModel.js";
import { writeXKTModelToArrayBuffer } from "./node_modules/@xeokit/xeokit-convert/src/XKTModel/writeXKTModelToArrayBuffer.js";

const MAGIC = "XKTGEO01";
const [END, MATERIAL, GEOMETRY, ENTITY] = [0, 1, 2, 3];
const PRIMITIVES = { 4: "triangles", 1: "lines" };
const READ_CHUNK = 1 << 20;
const PROGRESS_MS = 500;

const { values: args } = parseArgs({
  options: {
    geometry: { type: "string" },
    metadata: { type: "string" },
    source: { type: "string" },
    output: { type: "string" },
    "metadata-out": { type: "string" },
  },
});

// written to the descriptor itself: console.log would first set up process.stdout's stream machinery
const say = (message) => fs.writeSync(1, `${JSON.stringify(message)}\n`);
const progress = (percent) => say({ phase: "xkt", percent: Math.floor(percent) });

class RecordReader {
  constructor(path) {
    this.fd = fs.openSync(path, "r");
    this.size = fs.fstatSync(this.fd).size;
    this.buffer = Buffer.alloc(READ_CHUNK);
    this.start = 0;
    this.end = 0;
    this.consumed = 0;
  }

  need(bytes) {
    if (this.end - this.start >= bytes) return;
    this.buffer.copy(this.buffer, 0, this.start, this.end);
    this.end -= this.start;
    this.start = 0;
    if (bytes > this.buffer.length) {
      const larger = Buffer.alloc(Math.max(bytes, 2 * this.buffer.length));
      this.buffer.copy(larger, 0, 0, this.end);
      this.buffer = larger;
    }
    while (this.end < bytes) {
      const read = fs.readSync(this.fd, this.buffer, this.end, this.buffer.length - this.end, null);
      if (read === 0) throw new Error("the geometry records end early (the geometry stage did not finish them)");
      this.end += read;
    }
  }

  take(bytes) {
    this.need(bytes);
    const at = this.start;
    this.start += bytes;
    this.consumed += bytes;
    return at;
  }

  u8() { return this.buffer.readUInt8(this.take(1)); }
  u16() { return this.buffer.readUInt16LE(this.take(2)); }
  u32() { return this.buffer.readUInt32LE(this.take(4)); }
  i32() { return this.buffer.readInt32LE(this.take(4)); }
  text(bytes) { const at = this.take(bytes); return this.buffer.toString("utf-8", at, at + bytes); }

  // a copy: XKTModel keeps some arrays it is given
  array(Type, count) {
    const bytes = count * Type.BYTES_PER_ELEMENT;
    const at = this.take(bytes);
    const copy = new Type(count);
    new Uint8Array(copy.buffer).set(this.buffer.subarray(at, at + bytes));
    return copy;
  }
}

function readRecordsInto(xktModel, path) {
  const reader = new RecordReader(path);
  if (reader.text(MAGIC.length) !== MAGIC) throw new Error("the geometry file is not a geometry record stream");
  const materials = [];
  let nextMeshId = 0;
  let entities = 0;
  let lastProgress = Date.now();
  for (;;) {
    const tag = reader.u8();
    if (tag === MATERIAL) {
      const id = reader.u32();
      const [r, g, b, opacity, metallic, roughness] = reader.array(Float64Array, 6);
      materials[id] = { color: new Float32Array([r, g, b, 1]), opacity, metallic, roughness };
    } else if (tag === GEOMETRY) {
      const geometryId = reader.u32();
      const primitiveType = PRIMITIVES[reader.u8()];
      const positions = reader.array(Float32Array, reader.u32());
      const normals = reader.array(Float32Array, reader.u32());
      const indices = reader.array(Uint32Array, reader.u32());
      xktModel.createGeometry({
        geometryId, primitiveType, axisLabel: "", positions, indices, ...(normals.length ? { normals } : {}),
      });
    } else if (tag === ENTITY) {
      let entityId = reader.text(reader.u16());
      const matrix = Array.from(reader.array(Float64Array, 16));
      const meshIds = [];
      for (let count = reader.u32(); count > 0; count--) {
        const geometryId = reader.u32();
        const material = materials[reader.i32()];
        const meshId = nextMeshId++;
        xktModel.createMesh({
          meshId, geometryId, matrix: matrix.slice(),
          ...(material ? material : { color: [1.0, 1.0, 1.0], opacity: 1.0 }),
        });
        meshIds.push(meshId);
      }
      while (!entityId || xktModel.entities[entityId]) entityId = `entity-${nextMeshId++}`;  // as xeokit's glTF parser
      if (meshIds.length) xktModel.createEntity({ entityId, meshIds });
      entities++;
      if (Date.now() - lastProgress > PROGRESS_MS) {
        progress(85 + (7 * reader.consumed) / reader.size);
        lastProgress = Date.now();
      }
    } else if (tag === END) {
      const written = reader.u32();
      if (written !== entities) throw new Error(`the geometry records hold ${entities} elements, ${written} were written`);
      fs.closeSync(reader.fd);
      return entities;
    } else {
      throw new Error(`unknown geometry record ${tag}`);
    }
  }
}

// finalize() runs these steps one after the other; on a large model each takes seconds, so each reports progress
const FINALIZE_STEPS = ["_bakeSingleUseGeometryPositions", "_bakeAndOctEncodeNormals", "_createEntityAABBs", "_createKDTree",
  "_createTilesFromKDTree", "_createReusedGeometriesDecodeMatrix", "_flagSolidGeometries"];

function reportFinalizeSteps(xktModel) {
  FINALIZE_STEPS.forEach((step, index) => {
    const original = xktModel[step];
    if (typeof original !== "function") return;
    xktModel[step] = function (...stepArgs) {
      progress(92 + (5 * index) / FINALIZE_STEPS.length);
      return original.apply(this, stepArgs);
    };
  });
}

async function convertRecords() {
  const xktModel = new XKTModel({ minTileSize: 200 });
  const objects = readRecordsInto(xktModel, args.geometry);
  progress(92);
  reportFinalizeSteps(xktModel);
  await xktModel.finalize();
  progress(97);
  // parsed only now: the meta-model's objects never coexist with finalize()'s working copies
  const metaModel = JSON.parse(fs.readFileSync(args.metadata, "utf-8"));
  const stats = {};
  progress(98);
  const xkt = writeXKTModelToArrayBuffer(xktModel, metaModel, stats, { zip: false });
  progress(99);
  fs.writeFileSync(args.output, new Uint8Array(xkt));
  say({ objects, geometries: xktModel.geometriesList.length, xktKB: Math.round(xkt.byteLength / 1000) });
}

async function convertIFC() {
  const { convert2xkt } = await import("@xeokit/xeokit-convert/src/convert2xkt.js");
  let metaModel = null;
  const stats = {};
  await convert2xkt({
    sourceData: fs.readFileSync(args.source),
    sourceFormat: "ifc",
    output: args.output,
    stats,
    outputXKTModel: (xktModel) => {
      if (args["metadata-out"]) metaModel = xktModel;
    },
    log: () => {},
  });
  if (metaModel) fs.writeFileSync(args["metadata-out"], JSON.stringify(metaModelToJSON(metaModel)));
  say({ objects: stats.numObjects, xktKB: Number(stats.xktSize) });
}

function metaModelToJSON(xktModel) {
  return {
    projectId: xktModel.projectId,
    metaObjects: Object.values(xktModel.metaObjects).map((m) => ({
      id: m.metaObjectId,
      type: m.metaObjectType,
      name: m.metaObjectName,
      parent: m.parentMetaObjectId,
      ...(m.propertySetIds && m.propertySetIds.length ? { propertySetIds: m.propertySetIds } : {}),
    })),
    propertySets: Object.values(xktModel.propertySets).map((p) => ({
      id: p.propertySetId,
      name: p.propertySetName,
      type: p.propertySetType,
      properties: p.properties,
    })),
  };
}

if (!args.output || !(args.source || (args.geometry && args.metadata))) {
  console.error("usage: convert.js --geometry FILE --metadata FILE --output FILE | --source FILE.ifc --output FILE [--metadata-out FILE]");
  process.exit(2);
}
try {
  await (args.source ? convertIFC() : convertRecords());
} catch (err) {
  console.error(`conversion failed: ${err && err.stack ? err.stack : err}`);
  process.exit(1);
}
