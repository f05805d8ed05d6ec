// The page's entry: a few bytes under a stable name that load the content-hashed application chunk.
import("./main.js").catch((error) => {
  const state = document.getElementById("stage-state");
  if (state) state.textContent = `The web client could not start: ${error.message}`;
  throw error;
});
