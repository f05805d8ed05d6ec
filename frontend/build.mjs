// Bundles src/main.js (with xeokit-sdk) and src/app.css into dist/, which the gateway serves under /static/viewer/.
import * as esbuild from "esbuild";

await esbuild.build({
  entryPoints: { app: "src/main.js", style: "src/app.css" },
  bundle: true,
  format: "esm",
  target: ["chrome110", "firefox110", "safari16"],
  minify: true,
  sourcemap: true,
  outdir: "dist",
  // xeokit-sdk embeds an Emscripten module whose Node.js branch requires these; browsers never take it
  external: ["fs", "path"],
  logLevel: "warning",
});
