// Bundles convert.js with the parts of xeokit-convert it uses into dist/convert.mjs: one file loads far faster than
// the hundreds of ES modules it replaces. The web-ifc fallback (convert2xkt with all its parsers) is bundled on its
// own into dist/fallback.mjs, loaded only for IFC schemas ifcopenshell cannot open.
import fs from "node:fs";
import * as esbuild from "esbuild";

const CONVERT2XKT = "@xeokit/xeokit-convert/src/convert2xkt.js";
// XKTModel imports these for textures only, which geometry records never have: in convert.mjs they are stubs that
// throw if ever called, so node does not load and run them (with loaders.gl's worker setup) at every conversion:
// ~1.7 MB less at the XKT stage's peak
const TEXTURE_IMPORTS = {
  "@loaders.gl/core": ["encode", "load"],
  "@loaders.gl/textures": ["KTX2BasisWriter"],
  "@loaders.gl/images": ["ImageLoader"],
};

const withoutTextures = {
  name: "without-textures",
  setup(build) {
    build.onResolve({ filter: /^@loaders\.gl\// }, (args) => ({ path: args.path, namespace: "without-textures" }));
    build.onLoad({ filter: /.*/, namespace: "without-textures" }, (args) => {
      const names = TEXTURE_IMPORTS[args.path];
      if (!names) return { errors: [{ text: `${args.path} is not one of the texture imports this bundle leaves out` }] };
      const stub = `() => { throw new Error("${args.path} is left out of convert.mjs: geometry records have no textures"); }`;
      return { contents: names.map((name) => `export const ${name} = ${stub};`).join("\n"), loader: "js" };
    });
  },
};

const fallbackAsItsOwnFile = {
  name: "fallback-as-its-own-file",
  setup(build) {
    build.onResolve({ filter: /convert2xkt\.js$/ }, () => ({ path: "./fallback.mjs", external: true }));
  },
};

const common = { bundle: true, platform: "node", format: "esm", target: "node20", logLevel: "warning" };
const fallback = {
  ...common,
  // web-ifc finds its .wasm next to its own file, so it stays in node_modules
  external: ["web-ifc"],
  // bundled CommonJS dependencies call require() (none are in convert.mjs)
  banner: { js: "import { createRequire as createRequireForBundle } from 'node:module'; const require = createRequireForBundle(import.meta.url);" },
};

fs.rmSync("dist/chunks", { recursive: true, force: true }); // the chunks of an earlier layout

await esbuild.build({ ...common, entryPoints: ["convert.js"], outfile: "dist/convert.mjs", plugins: [withoutTextures, fallbackAsItsOwnFile] });
await esbuild.build({ ...fallback, entryPoints: [`node_modules/${CONVERT2XKT}`], outfile: "dist/fallback.mjs" });
