// The build script: edit it or its PARAMS, stage, undo/redo, run in the sandbox, save a version, discard.
import { guarded, h, replace, toast } from "./ui.js";

export class ScriptPanel {
  constructor(app) {
    this.app = app;
    this.root = document.getElementById("tab-script");
  }

  api(method, tail, body) {
    return this.app.api.call(method, `/models/${this.app.model.id}/${tail}`, body === undefined ? {} : { json: body });
  }

  async load() {
    const state = await guarded(() => this.api("GET", "script"), "Loading the script failed");
    if (!state) return;
    const params = state.script ? await guarded(() => this.api("GET", "script/params"), "Reading PARAMS failed") : null;
    // the staging may be saved or discarded between the two reads (the agent works meanwhile): then there is no diff
    const diff = state.source === "staging" ? await this.api("GET", "script/staging/diff?from=0").catch(() => null) : null;
    this.render(state, params, diff);
  }

  render(state, params, diff) {
    if (!state.script) {
      replace(this.root, h("p", { class: "hint", "data-testid": "no-script" }, "This model has no build script (an uploaded IFC). Stage one below to take it over."),
        this.scriptEditor(""));
      return;
    }
    const staging = state.staging;
    replace(this.root,
      h("p", { class: "meta", "data-testid": "script-state" },
        `${state.source === "staging" ? "Staged" : "Saved"} · version ${state.version || "none"} · step ${staging.cursor ?? "-"} of ${staging.steps}${state.ran ? " · built" : ""}`),
      h("div", { class: "toolbar" },
        h("button", { onClick: () => this.act("POST", "script/undo"), disabled: !staging.canUndo, "data-testid": "undo" }, "Undo"),
        h("button", { onClick: () => this.act("POST", "script/redo"), disabled: !staging.canRedo, "data-testid": "redo" }, "Redo"),
        h("button", { onClick: () => this.act("POST", "script/run"), disabled: state.source !== "staging", "data-testid": "run" }, "Run"),
        h("button", { onClick: () => this.save(), disabled: state.source !== "staging", "data-testid": "save" }, "Save version"),
        h("button", { onClick: () => this.act("POST", "script/discard"), disabled: state.source !== "staging", class: "danger", "data-testid": "discard" }, "Discard")),
      params && h("form", { class: "params", onSubmit: (event) => { event.preventDefault(); this.stageParams(event.target.elements.params.value); } },
        h("h4", {}, "PARAMS"),
        h("textarea", { name: "params", rows: 10, spellcheck: "false", "data-testid": "params" }, JSON.stringify(params, null, 2)),
        h("button", { "data-testid": "stage-params" }, "Stage PARAMS")),
      diff && h("details", { open: true }, h("summary", {}, "Staged changes"), h("pre", { class: "diff", "data-testid": "staging-diff" }, diff.unified || "(no text change)")),
      this.scriptEditor(state.script));
  }

  scriptEditor(script) {
    return h("details", {}, h("summary", {}, "Build script"),
      h("form", { onSubmit: (event) => { event.preventDefault(); this.stageScript(event.target.elements.script.value); } },
        h("textarea", { name: "script", rows: 18, spellcheck: "false", class: "code", "data-testid": "script-text" }, script),
        h("button", { "data-testid": "stage-script" }, "Stage script")));
  }

  async act(method, tail, body) {
    const result = await guarded(() => this.api(method, tail, body), `${tail} failed`);
    if (result && result.semanticDiff !== undefined) {
      const d = result.semanticDiff;
      toast(d ? `Built: ${d.added} added, ${d.removed} removed, ${d.changed} changed` : "Built");
      this.app.productChanged();
    } else if (tail === "script/discard" && result) {
      this.app.productChanged();
    }
    await this.load();
    return result;
  }

  async save() {
    const saved = await this.act("POST", "script/save", { note: "" });
    if (saved && saved.version) toast(`Saved ${saved.version}`);
    this.app.diff.load();
  }

  stageParams(text) {
    let params;
    try {
      params = JSON.parse(text);
    } catch (error) {
      return toast(`PARAMS are not valid JSON: ${error.message}`, "error");
    }
    return this.act("PUT", "script", { params });
  }

  stageScript(script) {
    return this.act("PUT", "script", { script });
  }
}
