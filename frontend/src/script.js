// The build script: a CodeMirror 6 editor (Python, line numbers; a failed run's error marked on its line), PARAMS
// as a typed form beside the raw JSON, stage / undo / redo / run / save with a note / discard, and the version
// history with notes, rollback and each version's semantic diff.
//
// Nothing typed is lost: a reload (the agent staged a step, a run finished) replaces the editor or the PARAMS only
// while they hold no unsaved edits; otherwise it asks first and keeps the edits until told to drop them.
//
// A read that fails is said in the panel (script-load-error), never left as a missing PARAMS form or an empty
// history: only a staging diff that is gone because the staging was saved or discarded meanwhile (a 4xx) is quiet.
import { defaultKeymap, history, historyKeymap, indentWithTab } from "@codemirror/commands";
import { python } from "@codemirror/lang-python";
import { bracketMatching, defaultHighlightStyle, indentOnInput, syntaxHighlighting } from "@codemirror/language";
import { lintGutter, setDiagnostics } from "@codemirror/lint";
import { highlightSelectionMatches, searchKeymap } from "@codemirror/search";
import { EditorState } from "@codemirror/state";
import { EditorView, drawSelection, highlightActiveLine, highlightActiveLineGutter, keymap, lineNumbers } from "@codemirror/view";
import { renderDiffList } from "./diff.js";
import { t } from "./i18n.js";
import { errorText, h, replace, setText, toast } from "./ui.js";

// the innermost frame of the build script in a Python traceback (the sandbox runs it as .../script.py)
const TRACEBACK_LINE = /File "[^"]*script\.py", line (\d+)/g;

export function errorLine(message) {
  let line = null;
  for (const match of String(message || "").matchAll(TRACEBACK_LINE)) line = Number(match[1]);
  return line;
}

function fieldKind(value) {
  if (typeof value === "number") return "number";
  if (typeof value === "boolean") return "boolean";
  if (typeof value === "string") return "string";
  return "json";
}

export class ScriptPanel {
  constructor(app) {
    this.app = app;
    this.root = document.getElementById("tab-script");
    this.baseline = null; // the script as last loaded into the editor
    this.paramsBaseline = null; // JSON text of the PARAMS as last loaded into the form
    this.incoming = null; // {script, params} from the server, held back while the user has edits
    this.layout();
  }

  api(method, tail, body) {
    const path = `/models/${this.app.model.id}/${tail}`;
    if (tail === "script/save") return this.app.api.once(method, path, body);  // retried with its Idempotency-Key
    return this.app.api.call(method, path, body === undefined ? {} : { json: body });
  }

  // --- layout, built once ---------------------------------------------------------------------------------

  layout() {
    const button = (label, testid, action, extra = {}) => h("button", { type: "button", i18n: label, "data-testid": testid, onClick: action, ...extra });
    // what changes the script or its versions needs the edit capability (account.js hides it without)
    const change = (label, testid, action, extra = {}) => button(label, testid, action, { "data-needs": "edit", ...extra });
    this.readOnly = h("p", { class: "hint", "data-when-lacking": "edit", "data-testid": "script-read-only",
      i18n: "You may read this script and its versions; changing them needs the editor role in this project." });
    this.stateLine = h("p", { class: "meta", "data-testid": "script-state" });
    this.loadErrors = h("div", { class: "error load-error", role: "alert", "data-testid": "script-load-error", hidden: true });
    this.noScript = h("p", { class: "hint", "data-testid": "no-script", i18n: "This model has no build script (an uploaded IFC). Stage one below to take it over.", hidden: true });
    this.note = h("input", { i18nPlaceholder: "Note for the version", "data-testid": "save-note", class: "note", "data-needs": "edit" });
    this.buttons = {
      undo: change("Undo", "undo", () => this.act("POST", "script/undo")),
      redo: change("Redo", "redo", () => this.act("POST", "script/redo")),
      run: change("Run", "run", () => this.act("POST", "script/run")),
      save: change("Save version", "save", () => this.save()),
      discard: change("Discard", "discard", () => this.act("POST", "script/discard"), { class: "danger" }),
    };
    this.conflict = h("div", { class: "conflict", role: "alert", "data-testid": "script-conflict", hidden: true },
      h("p", { i18n: "The script was changed elsewhere (e.g. by the agent) while you were editing it." }),
      button("Load theirs (drop my edits)", "conflict-load", () => this.acceptIncoming()),
      button("Keep mine", "conflict-keep", () => { this.conflict.hidden = true; }));
    this.errorBox = h("div", { class: "error run-error", "data-testid": "run-error", hidden: true });
    this.paramsForm = h("div", { class: "params-form", "data-testid": "params-form" });
    this.paramsRaw = h("textarea", { rows: 8, spellcheck: "false", class: "code", "data-testid": "params", onInput: () => this.rawParamsEdited() });
    this.paramsBox = h("section", { class: "params", hidden: true },
      h("h4", { i18n: "PARAMS" }),
      h("div", { class: "params-columns" }, this.paramsForm,
        h("details", { class: "raw-json" }, h("summary", { i18n: "Raw JSON" }), this.paramsRaw)),
      change("Stage PARAMS", "stage-params", () => this.stageParams()));
    this.stagingDiff = h("pre", { class: "diff", "data-testid": "staging-diff" });
    this.stagingBox = h("details", { open: true, hidden: true }, h("summary", { i18n: "Staged changes" }), this.stagingDiff);
    this.editorHost = h("div", { class: "editor", "data-testid": "script-editor" });
    this.dirtyMark = h("span", { class: "dirty", "data-testid": "script-dirty", hidden: true }, "●");
    this.versionList = h("ul", { class: "version-list", "data-testid": "version-list" });
    this.versionDiff = h("div", { class: "version-diff", "data-testid": "version-diff" });
    replace(this.root,
      this.readOnly, this.stateLine, this.loadErrors, this.noScript,
      h("div", { class: "toolbar" }, this.buttons.undo, this.buttons.redo, this.buttons.run, this.note, this.buttons.save, this.buttons.discard),
      this.conflict, this.errorBox, this.paramsBox, this.stagingBox,
      h("details", { class: "script-box", open: true }, h("summary", {}, h("span", { i18n: "Build script" }), " ", this.dirtyMark),
        this.editorHost, change("Stage script", "stage-script", () => this.stageScript())),
      h("details", { class: "versions-box" }, h("summary", { i18n: "Version history" }), this.versionList, this.versionDiff));
    this.editor = new EditorView({
      parent: this.editorHost,
      state: this.editorState(""),
    });
  }

  editorState(text) {
    return EditorState.create({
      doc: text,
      extensions: [
        lineNumbers(), highlightActiveLineGutter(), history(), drawSelection(), indentOnInput(), bracketMatching(),
        highlightActiveLine(), highlightSelectionMatches(), syntaxHighlighting(defaultHighlightStyle), python(), lintGutter(),
        keymap.of([...defaultKeymap, ...historyKeymap, ...searchKeymap, indentWithTab]),
        EditorView.updateListener.of((update) => { if (update.docChanged) this.dirtyMark.hidden = !this.scriptDirty(); }),
      ],
    });
  }

  editorText() {
    return this.editor.state.doc.toString();
  }

  setEditorText(text) {
    this.editor.setState(this.editorState(text));
    this.baseline = text;
    this.dirtyMark.hidden = true;
  }

  scriptDirty() {
    return this.baseline !== null && this.editorText() !== this.baseline;
  }

  paramsDirty() {
    return this.paramsBaseline !== null && this.paramsRaw.value !== this.paramsBaseline;
  }

  // --- loading --------------------------------------------------------------------------------------------

  async load() {
    if (!this.app.model) return;
    const modelId = this.app.model.id;
    if (this.modelId !== modelId) { // another model: nothing of the previous one's edits applies
      this.modelId = modelId;
      this.baseline = null;
      this.paramsBaseline = null;
      this.incoming = null;
      this.conflict.hidden = true;
      this.errorBox.hidden = true;
      this.versionDiff.replaceChildren();
    }
    const failures = [];
    const read = (tail, label, fallback, quiet = () => false) => this.api("GET", tail).catch((error) => {
      if (!quiet(error)) failures.push(`${t(label)}: ${errorText(error)}`);
      return fallback;
    });
    const state = await read("script", "Loading the script failed", null);
    if (this.app.model.id !== modelId) return;
    if (!state) {
      this.showLoadErrors(failures);
      return;
    }
    const [params, diff, versions] = await Promise.all([
      state.script ? read("script/params", "Reading PARAMS failed", null) : null,
      // the staging may be saved or discarded between the reads (the agent works meanwhile): then there is no diff
      state.source === "staging" ? read("script/staging/diff?from=0", "Loading the staged changes failed", null, (error) => error.status >= 400 && error.status < 500) : null,
      read("scripts", "Loading the version history failed", []),
    ]);
    if (this.app.model.id !== modelId) return;
    this.showLoadErrors(failures);
    this.showState(state, diff);
    this.takeIncoming(state.script || "", params);
    this.showVersions(versions || []);
  }

  showLoadErrors(failures) {
    replace(this.loadErrors, failures.map((text) => h("p", {}, text)));
    this.loadErrors.hidden = !failures.length;
  }

  showState(state, diff) {
    this.state = state;
    const scripted = Boolean(state.script);
    this.noScript.hidden = scripted;
    this.stateLine.hidden = !scripted;
    const staging = state.staging || {};
    if (scripted) {
      setText(this.stateLine, [state.source === "staging" ? t("Staged") : t("Saved"), t("version {version}", { version: state.version || "none" }),
        t("step {cursor} of {steps}", { cursor: staging.cursor ?? "-", steps: staging.steps ?? 0 }), state.ran ? t("built") : null].filter(Boolean).join(" · "));
    }
    const staged = state.source === "staging";
    this.buttons.undo.disabled = !staging.canUndo;
    this.buttons.redo.disabled = !staging.canRedo;
    for (const name of ["run", "save", "discard"]) this.buttons[name].disabled = !staged;
    this.stagingBox.hidden = !diff;
    setText(this.stagingDiff, diff ? diff.unified || "(no text change)" : "");
  }

  // the server's script and PARAMS: taken at once where nothing is edited, else held back with a question
  takeIncoming(script, params) {
    const paramsText = params ? JSON.stringify(params, null, 2) : null;
    const scriptChanged = script !== this.baseline;
    const paramsChanged = paramsText !== this.paramsBaseline;
    if (scriptChanged && script === this.editorText()) this.baseline = script; // what the user staged came back
    if (paramsChanged && paramsText !== null && this.canonicalRawParams() === paramsText) this.paramsBaseline = paramsText;
    if (script === this.baseline && paramsText === this.paramsBaseline) return;
    const blocked = (scriptChanged && this.scriptDirty()) || (paramsChanged && this.paramsDirty());
    if (blocked) {
      this.incoming = { script, params };
      this.conflict.hidden = false;
      return;
    }
    if (scriptChanged) this.setEditorText(script);
    if (paramsChanged) this.setParams(params);
  }

  acceptIncoming() {
    if (this.incoming) {
      this.setEditorText(this.incoming.script);
      this.setParams(this.incoming.params);
    }
    this.incoming = null;
    this.conflict.hidden = true;
  }

  // --- PARAMS: typed form <-> raw JSON ------------------------------------------------------------------------

  setParams(params) {
    this.paramsBox.hidden = !params;
    this.paramsBaseline = params ? JSON.stringify(params, null, 2) : null;
    this.paramsRaw.value = this.paramsBaseline || "";
    this.buildParamsForm(params || {});
  }

  buildParamsForm(params) {
    this.paramsKinds = Object.fromEntries(Object.entries(params).map(([key, value]) => [key, fieldKind(value)]));
    replace(this.paramsForm, Object.entries(params).map(([key, value]) => {
      const kind = this.paramsKinds[key];
      const attributes = { name: key, dataset: { testid: `param-${key}`, kind }, onInput: () => this.formParamsEdited(), onChange: () => this.formParamsEdited() };
      let input;
      if (kind === "boolean") input = h("input", { ...attributes, type: "checkbox", checked: value });
      else if (kind === "number") input = h("input", { ...attributes, type: "number", step: "any", value: String(value) });
      else if (kind === "string") input = h("input", { ...attributes, type: "text", value });
      else input = h("textarea", { ...attributes, rows: 2, class: "code", value: JSON.stringify(value) });
      return h("label", { class: `param ${kind}` }, h("span", { class: "param-name" }, key), input, h("small", { class: "param-kind" }, kind));
    }));
  }

  // the form's values, typed; null (with the field marked) when one does not parse
  formParams() {
    const params = {};
    let valid = true;
    for (const input of this.paramsForm.querySelectorAll("[data-kind]")) {
      const kind = input.dataset.kind;
      input.classList.remove("invalid");
      try {
        if (kind === "boolean") params[input.name] = input.checked;
        else if (kind === "number") {
          if (input.value.trim() === "" || Number.isNaN(Number(input.value))) throw new Error("not a number");
          params[input.name] = Number(input.value);
        } else if (kind === "string") params[input.name] = input.value;
        else params[input.name] = JSON.parse(input.value);
      } catch {
        input.classList.add("invalid");
        valid = false;
      }
    }
    return valid ? params : null;
  }

  canonicalRawParams() {
    try {
      return JSON.stringify(JSON.parse(this.paramsRaw.value), null, 2);
    } catch {
      return null;
    }
  }

  formParamsEdited() {
    const params = this.formParams();
    if (params) this.paramsRaw.value = JSON.stringify(params, null, 2);
  }

  rawParamsEdited() {
    let params;
    try {
      params = JSON.parse(this.paramsRaw.value);
    } catch {
      this.paramsRaw.classList.add("invalid");
      return;
    }
    this.paramsRaw.classList.remove("invalid");
    if (params && typeof params === "object" && !Array.isArray(params)) this.buildParamsForm(params);
  }

  // --- actions ----------------------------------------------------------------------------------------------

  // replaceEdits: the action replaces the script on purpose (rollback), so the editor takes the answer's
  async act(method, tail, body, { replaceEdits = false } = {}) {
    this.showError(null);
    let result;
    try {
      result = await this.api(method, tail, body);
    } catch (error) {
      this.showError(error);
      return undefined;
    }
    if (result && result.semanticDiff !== undefined) {
      const d = result.semanticDiff;
      toast(d ? t("Built: {added} added, {removed} removed, {changed} changed", d) : t("built"));
      this.app.productChanged();
    } else if (tail === "script/discard" && result) {
      this.app.productChanged();
    }
    if (replaceEdits) {
      this.baseline = null;
      this.paramsBaseline = null;
    }
    await this.load();
    return result;
  }

  // a failed run's error: shown, and its line in the build script marked in the editor
  showError(error) {
    if (!error) {
      this.errorBox.hidden = true;
      this.editor.dispatch(setDiagnostics(this.editor.state, []));
      return;
    }
    const message = errorText(error);
    const line = errorLine(message);
    replace(this.errorBox,
      line && h("button", { type: "button", class: "link", "data-testid": "error-line", onClick: () => this.gotoLine(line) }, t("The run failed at line {line}", { line })),
      h("pre", {}, message));
    this.errorBox.hidden = false;
    if (line && line <= this.editor.state.doc.lines) {
      const { from, to } = this.editor.state.doc.line(line);
      this.editor.dispatch(setDiagnostics(this.editor.state, [{ from, to, severity: "error", message: message.split("\n").filter(Boolean).pop() || message }]));
      this.gotoLine(line);
    }
  }

  gotoLine(line) {
    const { from } = this.editor.state.doc.line(Math.min(line, this.editor.state.doc.lines));
    this.editor.dispatch({ selection: { anchor: from }, effects: EditorView.scrollIntoView(from, { y: "center" }) });
    this.root.querySelector(".script-box").open = true;
  }

  async save() {
    const saved = await this.act("POST", "script/save", { note: this.note.value });
    if (saved && saved.version) {
      this.note.value = "";
      toast(t("Saved {version}", { version: saved.version }));
    }
    if (this.app.panels.diff) this.app.panels.diff.then((diff) => diff.load());
  }

  stageParams() {
    let params;
    try {
      params = JSON.parse(this.paramsRaw.value);
    } catch (error) {
      return toast(t("PARAMS are not valid JSON: {error}", { error: error.message }), "error");
    }
    return this.act("PUT", "script", { params });
  }

  stageScript() {
    return this.act("PUT", "script", { script: this.editorText() });
  }

  // --- version history ------------------------------------------------------------------------------------

  showVersions(versions) {
    const ordered = [...versions].sort((a, b) => Number(b.version.slice(1)) - Number(a.version.slice(1)));
    replace(this.versionList, ordered.length ? ordered.map((version) => {
      const number = Number(version.version.slice(1));
      return h("li", { class: "version", dataset: { version: version.version, testid: "version-item" } },
        h("strong", {}, version.version), " ", h("small", { class: "meta" }, version.createdAt ? new Date(version.createdAt).toLocaleString() : ""),
        h("p", { class: "version-note" }, version.note || t("(no note)")),
        h("div", { class: "issue-actions" },
          h("button", { type: "button", i18n: "Changes", "data-testid": "version-changes", disabled: number < 2, onClick: () => this.versionChanges(`v${number - 1}`, version.version) }),
          h("button", { type: "button", i18n: "Rollback", "data-testid": "version-rollback", "data-needs": "edit", onClick: () => this.rollback(version.version) })));
    }) : h("li", { class: "hint", i18n: "No saved versions yet." }));
  }

  async versionChanges(base, target) {
    let diff;
    try {
      diff = await this.app.api.post(`/models/${this.app.model.id}/edit/diff`, { base, target });
    } catch (error) {
      replace(this.versionDiff, h("p", { class: "error", role: "alert", "data-testid": "version-diff-error" }, `${t("Diff failed")}: ${errorText(error)}`));
      return;
    }
    replace(this.versionDiff, h("h5", {}, `${base} → ${target}`), renderDiffList(this.app, diff));
  }

  async rollback(version) {
    if (!window.confirm(t("Roll back to {version}? The staged script is replaced by it and built.", { version }))) return;
    await this.act("POST", "script/rollback", { version }, { replaceEdits: true });
  }

  relabel() {
    if (this.state) this.showState(this.state, this.stagingBox.hidden ? null : { unified: this.stagingDiff.textContent });
  }
}
