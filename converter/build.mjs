// Bundles convert.js with the parts of xeokit-convert it uses into dist/convert.mjs: one file loads far faster than
// the hundreds of ES modules it replaces. The web-ifc fallback (convert2xkt with all its parsers) is split into its
// own chunk, loaded only for IFC schemas ifcopenshell cannot open.
import fs from "node:fs";
import * as esbuild from "esbuild";

fs.rmSync("dist/chunks", { recursive: true, force: true }); // chunk names carry a hash: no stale ones left over

await esbuild.build({
  entryPoints: ["convert.js"],
  bundle: true,
  splitting: true,
  platform: "node",
  format: "esm",
  target: "node20",
  outdir: "dist",
  outExtension: { ".js": ".mjs" },
  chunkNames: "chunks/[name]-[hash]",
  // web-ifc finds its .wasm next to its own file, so it stays in node_modules
  external: ["web-ifc"],
  // bundled CommonJS dependencies call require()
  banner: { js: "import { createRequire as createRequireForBundle } from 'node:module'; const require = createRequireForBundle(import.meta.url);" },
  logLevel: "warning",
});
