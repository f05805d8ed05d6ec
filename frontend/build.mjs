// Bundles the web client into dist/, which the gateway serves under /static/viewer/ (whitenoise, finders).
//  - app.js: a tiny stable entry (the page's <script>) that imports the hashed chunks under chunks/;
//  - chunks/*-[hash].js: the code, split per lazily loaded panel; content-hashed, so served as immutable;
//  - style.css: the stylesheet (stable name, revalidated);
//  - every file also as .gz and .br beside it, which whitenoise serves to clients that accept them.
import * as esbuild from "esbuild";
import { readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { brotliCompressSync, constants, gzipSync } from "node:zlib";

const OUT = "dist";
rmSync(OUT, { recursive: true, force: true });

await esbuild.build({
  entryPoints: { app: "src/boot.js", style: "src/app.css" },
  bundle: true,
  splitting: true,
  format: "esm",
  target: ["chrome110", "firefox110", "safari16"],
  minify: true,
  sourcemap: true,
  outdir: OUT,
  entryNames: "[name]",
  chunkNames: "chunks/[name]-[hash]",
  assetNames: "chunks/[name]-[hash]",
  // xeokit-sdk embeds an Emscripten module whose Node.js branch requires these; browsers never take it
  external: ["fs", "path"],
  logLevel: "warning",
});

function* files(folder) {
  for (const name of readdirSync(folder)) {
    const path = join(folder, name);
    if (statSync(path).isDirectory()) yield* files(path);
    else yield path;
  }
}

for (const path of [...files(OUT)]) {
  if (!/\.(js|css|map)$/.test(path)) continue;
  const data = readFileSync(path);
  writeFileSync(`${path}.gz`, gzipSync(data, { level: 9 }));
  writeFileSync(`${path}.br`, brotliCompressSync(data, { params: { [constants.BROTLI_PARAM_QUALITY]: 11, [constants.BROTLI_PARAM_SIZE_HINT]: data.length } }));
}
