// The page's entry: a few bytes under a stable name that load the content-hashed application chunk. A model named
// in the address (#model=m_...) starts downloading here, before that chunk is even fetched: the 3D view takes the
// responses (viewer3d.js, EarlyDataSource) instead of requesting the files again.
const early = new Map(); // URL -> Promise of its Response, or null when the request failed
const model = /model=(m_[0-9a-f]{16})/.exec(window.location.hash);
if (model) {
  for (const name of ["model.xkt", "metadata.json"]) {
    const src = `/v1/models/${model[1]}/${name}`;
    early.set(src, fetch(src, { credentials: "same-origin" }).catch(() => null));
  }
}
import("./main.js").then((main) => main.start(early)).catch((error) => {
  const state = document.getElementById("stage-state");
  if (state) state.textContent = `The web client could not start: ${error.message}`;
  throw error;
});
