#!/usr/bin/env node
// Turns a GLB (node names = IFC GlobalIds) plus metadata.json into XKT with @xeokit/xeokit-convert,
// or, as the fallback for schemas ifcopenshell cannot open, converts the IFC directly with its web-ifc parser.
// Usage: node convert.js --source in.glb --metadata metadata.json --output model.xkt
//        node convert.js --source in.ifc --output model.xkt [--metadata-out metadata.json]
// The worker runs dist/convert.mjs, this file bundled with its dependencies by build.mjs (make setup).
import fs from "node:fs";
import { parseArgs } from "node:util";
import { convert2xkt } from "@xeokit/xeokit-convert/src/convert2xkt.js";
import { XKTModel, writeXKTModelToArrayBuffer } from "@xeokit/xeokit-convert/src/index.js";

const options = {
    source: { type: "string" },
    metadata: { type: "string" },
    output: { type: "string" },
    "metadata-out": { type: "string" },
    empty: { type: "boolean" },
    "parent-pid": { type: "string" },
};
const { values: args } = parseArgs({ options });
// The worker that started this process may die (killed, crashed): end with it instead of converting for nobody. Its
// pid comes as an argument because the modules above load for a while, long enough for the parent to be gone.
// The check runs between the converter's asynchronous steps.
const parentPid = Number(args["parent-pid"] || process.ppid);
const endWithoutParent = () => { if (process.ppid !== parentPid) process.exit(1); };
endWithoutParent();
setInterval(endWithoutParent, 1000).unref();
if (args.empty && args.output) {
  // A model without any geometry still gets a (geometry-less) XKT carrying its metadata.
  const xktModel = new XKTModel();
  await xktModel.finalize();
  const metaModel = args.metadata ? JSON.parse(fs.readFileSync(args.metadata, "utf-8")) : null;
  fs.writeFileSync(args.output, Buffer.from(writeXKTModelToArrayBuffer(xktModel, metaModel, {}, { zip: false })));
  console.log(JSON.stringify({ objects: 0 }));
  process.exit(0);
}
if (!args.source || !args.output) {
  console.error("usage: convert.js --source FILE --output FILE [--metadata FILE] [--metadata-out FILE] | --empty --output FILE");
  process.exit(2);
}

const stats = {};
let metaModel = null;
try {
  await convert2xkt({
    source: args.source,
    metaModelSource: args.metadata,
    output: args.output,
    stats,
    outputXKTModel: (xktModel) => {
      if (args["metadata-out"]) metaModel = xktModel;
    },
    log: () => {},
  });
} catch (err) {
  console.error(`conversion failed: ${err && err.stack ? err.stack : err}`);
  process.exit(1);
}
if (metaModel) {
  fs.writeFileSync(args["metadata-out"], JSON.stringify(metaModelToJSON(metaModel)));
}
console.log(JSON.stringify({ objects: stats.numObjects, metaObjects: stats.numMetaObjects, xktKB: Number(stats.xktSize) }));

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
