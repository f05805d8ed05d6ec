// A version change in 3D: the semantic diff of two versions (or a version and the current product), shown with the
// unchanged elements ghosted and the added / changed / removed ones coloured, a list that selects and flies to an
// element, and a warning when the view does not show the diff's target.
//
// A changed element's geometry (moved, turned, resized, reshaped) is listed in words from the diff's facts; other
// fields with their old and new values.
//
// A removed element the loaded geometry lacks is drawn from the base version's geometry: the gateway converts a
// saved version on request (POST .../versions/{version}/geometry, its progress shown here), then the view loads only
// those elements of it beside the current model, in red, pickable and reachable from the list. They go when the
// diff is cleared or another one is shown.
import { t } from "./i18n.js";
import { errorText, guarded, h, replace, setText } from "./ui.js";

const SAVED_VERSION = /^v[1-9]\d*$/;
const POLL_MS = 500;

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function nameOf(app, id) {
  const meta = app.view.metaObject(id);
  return meta ? `${meta.name || id} (${meta.type})` : id;
}

const metres = (value) => Number(value).toFixed(2);

// the direction of a move: "+X" along one axis, else the three components
function direction(moved) {
  const parts = [["X", moved.dx], ["Y", moved.dy], ["Z", moved.dz]].filter(([, v]) => Math.abs(v) >= 1e-4);
  if (parts.length === 1) return `${parts[0][1] > 0 ? "+" : "-"}${parts[0][0]}`;
  return `(${[moved.dx, moved.dy, moved.dz].map((v) => `${v >= 0 ? "+" : ""}${metres(v)}`).join(", ")})`;
}

// the geometry facts of a changed element in words: "moved 1.50 m +X", "resized 8.00 → 9.50 m", ...
export function geometryWords(facts) {
  const words = [];
  if (facts.moved) words.push(t("moved {distance} m {direction}", { distance: metres(facts.moved.distance), direction: direction(facts.moved) }));
  if (facts.turned) {
    const axis = facts.turned.about || `(${facts.turned.axis.map(metres).join(", ")})`;
    words.push(t("turned {degrees}° about {axis}", { degrees: Number(facts.turned.degrees).toFixed(1), axis }));
  }
  if (facts.size) {
    const resized = facts.size.old.map((old, i) => [old, facts.size.new[i]]).filter(([a, b]) => Math.abs(a - b) >= 1e-4);
    words.push(t("resized {sizes}", { sizes: resized.map(([a, b]) => `${metres(a)} → ${metres(b)} m`).join(", ") }));
  }
  if (facts.volume) words.push(t("volume {old} → {new} m³", { old: Number(facts.volume.old).toFixed(3), new: Number(facts.volume.new).toFixed(3) }));
  if (facts.representationChanged && !facts.size && !facts.volume) words.push(t("representation changed"));
  return words;
}

// which facts tell a geometry change; without them (a shape added or removed) the server's summary is shown
const FACTS_OF = { placement: ["moved", "turned"], shape: ["size", "volume", "representationChanged"] };

// one line per change: the geometry facts in words on one line, other fields with old and new values
function changeLines(item) {
  const lines = [];
  const given = item.geometry || {};
  const facts = geometryWords(given);
  for (const c of item.changes) {
    if (FACTS_OF[c.field]) {
      if (!FACTS_OF[c.field].some((name) => given[name])) lines.push(h("li", { dataset: { field: c.field } }, `${c.field}: ${c.summary}`));
    } else {
      lines.push(h("li", { dataset: { field: c.field } }, `${c.field}: ${JSON.stringify(c.old)} → ${JSON.stringify(c.new)}`));
    }
  }
  if (facts.length) lines.push(h("li", { dataset: { field: "geometry" }, "data-testid": "diff-geometry" }, facts.join("; ")));
  return lines;
}

// the diff as a list of elements; a click selects the element and flies to it when the view has it
export function renderDiffList(app, diff) {
  const entry = (kind, id, extra) => {
    const present = app.view.has ? app.view.has(id) : Boolean(app.view.metaObject(id));
    return h("li", { class: `${kind}${present ? "" : " absent"}`, dataset: { guid: id, testid: "diff-item", kind } },
      h("button", { type: "button", class: "link", disabled: !present, onClick: () => app.view.flyToObject ? app.view.flyToObject(id) : app.view.select(id) },
        `${kind === "added" ? "+" : kind === "removed" ? "−" : "~"} ${nameOf(app, id)}`),
      !present && h("small", { class: "meta" }, ` (${t("not in the view")})`),
      extra);
  };
  return h("div", {},
    h("p", { "data-testid": "diff-counts" }, t("{added} added · {removed} removed · {changed} changed", { added: diff.added.length, removed: diff.removed.length, changed: diff.changed.length })),
    h("ul", { class: "diff-list" },
      diff.added.map((id) => entry("added", id)),
      diff.removed.map((id) => entry("removed", id)),
      diff.changed.map((item) => entry("changed", item.guid,
        h("ul", {}, changeLines(item))))));
}

export class DiffPanel {
  constructor(app) {
    this.app = app;
    this.root = document.getElementById("tab-diff");
    this.diff = null;
  }

  async load() {
    if (!this.app.model) return;
    const versions = await guarded(() => this.app.api.get(`/models/${this.app.model.id}/edit/versions`), "Loading versions failed");
    if (!versions) return;
    const names = versions.versions.map((v) => v.version);
    this.diff = null;
    this.baseState = null;
    if (!names.length) {
      replace(this.root, h("p", { class: "hint", i18n: "No saved versions yet." }));
      return;
    }
    const targets = [...names, "current"];
    this.base = h("select", { name: "base", "data-testid": "diff-base" }, names.map((n, i) => h("option", { value: n, selected: i === names.length - 2 }, n)));
    this.target = h("select", { name: "target", "data-testid": "diff-target" }, targets.map((n, i) => h("option", { value: n, selected: i === targets.length - 1 }, n)));
    this.warning = h("p", { class: "warning", role: "status", "data-testid": "diff-warning", hidden: true });
    this.result = h("div", { id: "diff-result", "data-testid": "diff-result" });
    replace(this.root,
      h("form", { class: "diff-form", onSubmit: (event) => { event.preventDefault(); this.compare(); } },
        this.base, " → ", this.target,
        h("button", { "data-testid": "compare", i18n: "Compare" }),
        h("button", { type: "button", "data-testid": "clear-diff", i18n: "Clear colours", onClick: () => this.clear() })),
      h("p", { class: "hint", i18n: "Removed elements the loaded geometry lacks are drawn from the base version's geometry, converted on first use." }),
      this.warning, this.baseGeometry = h("p", { class: "hint", role: "status", "data-testid": "diff-base-geometry", hidden: true }), this.result);
  }

  async compare() {
    const base = this.base.value;
    const target = this.target.value;
    const diff = await guarded(() => this.app.api.post(`/models/${this.app.model.id}/edit/diff`, { base, target }), "Diff failed");
    if (!diff) return;
    this.diff = diff;
    this.app.view.showDiff(diff);
    this.showBaseGeometry(null);
    replace(this.result, renderDiffList(this.app, diff));
    this.onScreenChanged();
    await this.drawRemovedFromBase(diff);
  }

  clear() {
    this.diff = null;
    this.app.view.clearDiff();
    this.showBaseGeometry(null);
    this.result.replaceChildren();
    this.onScreenChanged();
  }

  // Removed elements the loaded geometry lacks: the base version's geometry is requested (converted once, then
  // kept by the gateway), its progress shown, and those elements loaded beside the model. Stops when the diff or
  // the model changes meanwhile.
  async drawRemovedFromBase(diff) {
    const view = this.app.view;
    const model = this.app.model;
    if (view !== this.app.view3d || !model || !SAVED_VERSION.test(diff.base)) return;
    // an element the loaded model knows (its meta object) but draws nothing for has no geometry (a storey)
    const missing = diff.removed.filter((id) => !view.has(id) && !view.metaObject(id));
    if (!missing.length) return;
    const still = () => this.diff === diff && this.app.model === model;
    const url = `/models/${model.id}/versions/${diff.base}/geometry`;
    try {
      let state = await this.app.api.post(url);
      while (still() && (state.status === "queued" || state.status === "converting")) {
        this.showBaseGeometry(state, diff.base);
        await sleep(POLL_MS);
        state = await this.app.api.get(url);
      }
      if (!still()) return;
      if (state.status !== "ready") {
        this.showBaseGeometry(state, diff.base);
        return;
      }
      this.showBaseGeometry({ status: "loading" }, diff.base);
      const drawn = await view.loadVersionElements(model.id, diff.base, missing);
      if (!still()) return;
      this.showBaseGeometry({ status: "loaded", count: drawn.length }, diff.base);
      replace(this.result, renderDiffList(this.app, diff));
    } catch (error) {
      if (still()) this.showBaseGeometry({ status: "failed", error: errorText(error) }, diff.base);
    }
  }

  // the state of the base version's geometry in words (null: nothing to say)
  showBaseGeometry(state, version) {
    this.baseState = state && { state, version };
    if (!this.baseGeometry) return;
    this.baseGeometry.hidden = !state;
    if (!state) return;
    this.baseGeometry.dataset.state = state.status;
    const progress = state.progress || { phase: state.status, percent: 0 };
    const converting = () => t("Converting {version}'s geometry for the removed elements: {phase} {percent}%", { version, phase: t(progress.phase), percent: progress.percent });
    const text = {
      queued: converting,
      converting,
      loading: () => t("Loading {version}'s geometry…", { version }),
      loaded: () => t("{count} removed elements drawn from {version}'s geometry.", { version, count: state.count }),
      failed: () => t("{version}'s geometry could not be made: {error}", { version, error: state.error }),
    }[state.status];
    setText(this.baseGeometry, text ? text() : state.status);
  }

  // the view shows the diff's target when it shows the current product (target "current") or that saved version
  targetOnScreen() {
    const shown = this.app.onScreen;
    if (!shown || shown.stale || !this.diff) return !this.diff;
    return this.diff.target === "current" || this.diff.target === shown.version;
  }

  onScreenChanged() {
    if (!this.warning) return;
    const warn = Boolean(this.diff) && !this.targetOnScreen();
    this.warning.hidden = !warn;
    if (warn) {
      const shown = this.app.onScreen;
      const label = !shown ? "—" : shown.stale ? t("an older product: reload to see the newest") : shown.version || t("current product");
      setText(this.warning, t("The view shows {shown}, but the diff's target is {target}: only elements present in the view are coloured.", { shown: label, target: this.diff.target }));
    }
  }

  relabel() {
    this.onScreenChanged();
    if (this.baseState) this.showBaseGeometry(this.baseState.state, this.baseState.version);
  }
}
