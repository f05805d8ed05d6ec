// Bundles convert.js with xeokit-convert into dist/convert.mjs: one file loads in about half the time of the
// hundreds of ES modules it replaces, which lets the worker start the converter only once ifcopenshell has finished.
import * as esbuild from "esbuild";

await esbuild.build({
  entryPoints: ["convert.js"],
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node20",
  outfile: "dist/convert.mjs",
  // web-ifc finds its .wasm next to its own file, so it stays in node_modules
  external: ["web-ifc"],
  // bundled CommonJS dependencies call require()
  banner: { js: "import { createRequire as createRequireForBundle } from 'node:module'; const require = createRequireForBundle(import.meta.url);" },
  logLevel: "warning",
});
