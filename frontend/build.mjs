// Bundles the web client into dist/, which the gateway serves under /static/viewer/ (whitenoise, finders).
//  - app.js: a tiny stable entry (the page's <script>) that imports the hashed chunks under chunks/;
//  - chunks/*-[hash].js: the code, split per lazily loaded panel; content-hashed, so served as immutable;
//  - style.css: the stylesheet (stable name, revalidated);
//  - preload.json: the chunks app.js loads at once (its dynamic import of main.js and what that imports), which the
//    page names as <link rel="modulepreload"> so that they download beside app.js instead of one after another;
//  - every file also as .gz and .br beside it, which whitenoise serves to clients that accept them.
import * as esbuild from "esbuild";
import { readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { brotliCompressSync, constants, gzipSync } from "node:zlib";

const OUT = "dist";
rmSync(OUT, { recursive: true, force: true });

// xeokit-sdk probes WebGL as its module is evaluated (WEBGL_INFO) on a canvas it then drops. The garbage collector
// finalizes that context later, and destroying it waits until the GPU process has finished everything queued before:
// when that falls right after a large model's first frame, the page froze until the frame was drawn (1.3-1.5 s on
// the 30 MB tower in SwiftShader, before the object tree could be built). The probe's context is lost at once
// instead (docs/architecture/web-client.md); the build fails if the probe's code is no longer where it was.
const XEOKIT_PROBE_END = /(gl\.getSupportedExtensions\(\)\.forEach\(function \(ext\) \{\s*WEBGL_INFO\.SUPPORTED_EXTENSIONS\[ext\] = true;\s*\}\);)/;
const loseXeokitProbeContext = {
  name: "lose-xeokit-probe-context",
  setup(build) {
    build.onLoad({ filter: /xeokit-sdk\.es\.js$/ }, ({ path }) => {
      const source = readFileSync(path, "utf8");
      if (source.split(XEOKIT_PROBE_END).length !== 3) throw new Error(`xeokit's WebGL probe not found once in ${path}`);
      return { contents: source.replace(XEOKIT_PROBE_END, '$1\n        gl.getExtension("WEBGL_lose_context")?.loseContext();'), loader: "js" };
    });
  },
};

const built = await esbuild.build({
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
  plugins: [loseXeokitProbeContext],
  metafile: true,
  logLevel: "warning",
});

// app.js's dynamic import of main.js, then main.js's static imports, transitively, as paths under dist/
function startChunks(outputs) {
  const entry = `${OUT}/app.js`;
  const main = outputs[entry].imports.filter((edge) => edge.kind === "dynamic-import").map((edge) => edge.path);
  if (main.length !== 1) throw new Error(`app.js should import one chunk dynamically, not ${main.length}`);
  const chunks = [];
  const visit = (path) => {
    if (chunks.includes(path)) return;
    chunks.push(path);
    for (const edge of outputs[path].imports) if (edge.kind === "import-statement" && !edge.external) visit(edge.path);
  };
  visit(main[0]);
  return chunks.map((path) => path.slice(OUT.length + 1));
}
writeFileSync(join(OUT, "preload.json"), JSON.stringify(startChunks(built.metafile.outputs)));

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
