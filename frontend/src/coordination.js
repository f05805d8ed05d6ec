// The Coordination tab (a project's models together, and their clashes): the project's models with discipline,
// version and status, each shown, hidden, isolated or X-rayed as a whole in the federated view; the project's clash
// tests (define: name, type, sets A and B of models with an IFC class filter and an exclusion, tolerance or
// distance, automatic re-runs; edit, delete); runs of a test (start, progress polled while queued or running,
// cancel, the summary); a run's clashes, grouped (by proximity, storey, element, class pair) and filtered by status.
// A click on a clash opens the project federated if it is not on screen, flies to the clash, shows its two
// elements alone in A's and B's colours and marks its point; Previous / Next step through the list; a clash's review
// status and assignee are set here; a run's clashes (each, or each group) are pinned as issues, or downloaded as a
// BCF 3.0 report.
//
// Defining and deleting tests needs the edit capability, running, cancelling, reviewing and pinning the review
// capability (account.js hides those controls without it; the hints say why). Reading needs neither.
import { rightsHint } from "./account.js";
import { ApiError } from "./api.js";
import { t } from "./i18n.js";
import { errorText, guarded, h, replace, setText, toast } from "./ui.js";
import { CLASH_COLOURS } from "./viewer3d.js";

const POLL_MS = 1000;
const TYPES = ["hard", "clearance", "duplicate"];
const GROUPINGS = [["", "no grouping"], ["by-proximity:1", "by proximity (1 m)"], ["by-proximity:5", "by proximity (5 m)"],
  ["storey", "by storey"], ["element", "by element"], ["classes", "by class pair"]];
const STATUSES = ["new", "active", "resolved", "missing"];
const REVIEW_STATUSES = ["", "reviewed", "approved"];
const SUMMARY_KEYS = ["new", "active", "approved", "resolved", "missing", "total"];
const PIN_KINDS = ["created", "reopened", "resolved", "unchanged"];
const TEST_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

function finished(run) {
  return run && ["done", "failed", "cancelled"].includes(run.status);
}

// a run's progress: a percent, or {percent, phase}
function percentOf(progress) {
  if (typeof progress === "number") return progress;
  return progress && typeof progress.percent === "number" ? progress.percent : 0;
}

function phaseOf(progress) {
  return progress && typeof progress === "object" && progress.phase ? progress.phase : "";
}

function count(value) {
  return Array.isArray(value) ? value.length : Number(value) || 0;
}

function names(text) {
  return text.split(/[\s,;]+/).map((name) => name.trim()).filter(Boolean);
}

function metres(value) {
  return `${Number(value).toFixed(3)} m`;
}

function rgb(colour) {
  return `rgb(${colour.map((c) => Math.round(c * 255)).join(",")})`;
}

export class CoordinationPanel {
  constructor(app) {
    this.app = app;
    this.root = document.getElementById("tab-coordination");
    this.projectId = null;
    this.project = null; // {projectId, title}
    this.models = []; // the federation's entries, with the model's name
    this.tests = [];
    this.test = null; // the chosen test's name
    this.runs = [];
    this.run = null; // the run shown
    this.clashes = [];
    this.current = null; // the clash shown in 3D (its clashId)
    this.timer = null;
    this.layout();
    app.view3d.on((event) => { if (["loaded", "unloaded", "visibility"].includes(event.type)) this.renderModels(); });
  }

  get base() {
    return `/projects/${this.projectId}`;
  }

  testPath(name = this.test) {
    return `${this.base}/clash-tests/${encodeURIComponent(name)}`;
  }

  runPath(runId = this.run && this.run.runId) {
    return `${this.testPath()}/runs/${runId}`;
  }

  // --- layout ---------------------------------------------------------------------------------------------

  layout() {
    const section = (title, testid, ...children) => h("section", { class: "coord-section", "data-testid": testid }, h("h4", { i18n: title }), ...children);
    this.heading = h("p", { class: "coord-project", "data-testid": "coord-project" });
    this.openButton = h("button", { type: "button", "data-testid": "coord-open-federation", i18n: "Open all models together", onClick: () => this.openFederation() });
    this.modelTable = h("table", { class: "coord-models", "data-testid": "coord-models" });
    this.testList = h("ul", { class: "coord-tests", "data-testid": "coord-tests" });
    this.form = h("form", { class: "coord-form", "data-testid": "coord-form", "data-needs": "edit", hidden: true,
      onSubmit: (event) => { event.preventDefault(); this.saveTest(); } });
    this.runBox = h("div", { class: "coord-run", "data-testid": "coord-run" });
    this.groupSelect = h("select", { "data-testid": "coord-group", onChange: () => this.loadClashes() },
      GROUPINGS.map(([value, label]) => h("option", { value, i18n: label })));
    this.statusSelect = h("select", { "data-testid": "coord-status-filter", onChange: () => this.loadClashes() },
      h("option", { value: "", i18n: "all statuses" }), STATUSES.map((status) => h("option", { value: status, i18n: status })));
    this.clashCount = h("span", { class: "hint", "data-testid": "coord-clash-count" });
    this.clashList = h("ul", { class: "coord-clashes", "data-testid": "coord-clashes" });
    this.detail = h("div", { class: "coord-detail", "data-testid": "coord-clash-detail", hidden: true });
    this.pinPer = h("select", { "data-testid": "coord-pin-per" }, h("option", { value: "clash", i18n: "one issue per clash" }), h("option", { value: "group", i18n: "one issue per group" }));
    this.results = section("Clashes", "coord-results",
      h("div", { class: "coord-filters" }, this.groupSelect, this.statusSelect, this.clashCount),
      h("div", { class: "coord-steps" },
        h("button", { type: "button", "data-testid": "coord-prev", i18n: "Previous", onClick: () => this.step(-1) }),
        h("button", { type: "button", "data-testid": "coord-next", i18n: "Next", onClick: () => this.step(1) }),
        h("span", { class: "legend" }, h("i", { style: `background:${rgb(CLASH_COLOURS.a)}` }), " A ", h("i", { style: `background:${rgb(CLASH_COLOURS.b)}` }), " B")),
      this.detail, this.clashList,
      h("div", { class: "coord-pin", "data-needs": "review" }, this.pinPer,
        h("button", { type: "button", "data-testid": "coord-pin", i18n: "Pin as issues", onClick: () => this.pin() })),
      h("button", { type: "button", "data-testid": "coord-report", i18n: "BCF report", onClick: () => this.downloadReport() }));
    this.results.hidden = true;
    this.body = h("div", { class: "coord-body", hidden: true },
      section("Models of the project", "coord-models-section", this.openButton, this.modelTable),
      section("Clash tests", "coord-tests-section",
        rightsHint("edit", "Your role here may only read: defining clash tests needs the editor role in this project.", "coord-edit-hint"),
        rightsHint("review", "Your role here may only read: running clash tests and reviewing clashes need the reviewer role in this project.", "coord-review-hint"),
        this.testList,
        h("button", { type: "button", "data-testid": "coord-test-new", "data-needs": "edit", i18n: "New clash test", onClick: () => this.editTest(null) }),
        this.form),
      section("Runs", "coord-runs-section", this.runBox),
      this.results);
    this.empty = h("p", { class: "hint", "data-testid": "coord-empty", i18n: "Open a model of a project, or a project's link (#project=…), to coordinate its models." });
    replace(this.root, this.heading, this.empty, this.body);
  }

  relabel() {
    this.renderModels();
    this.renderTests();
    this.renderRun();
    this.renderClashes();
  }

  // --- the project --------------------------------------------------------------------------------------

  // the project of what is open: the federated project, else the open model's (its chat session's) project, else
  // the one in the address
  async projectOfApp() {
    if (this.app.federation) return this.app.federation.projectId;
    if (this.app.model) {
      const session = await guarded(() => this.app.api.post("/chat/sessions", { title: this.app.model.name, modelId: this.app.model.id }), "Finding the model's project failed");
      return (session && session.projectId) || null;
    }
    return this.app.hashProjectId();
  }

  async load() {
    const projectId = await this.projectOfApp();
    if (projectId === this.projectId) {
      this.renderModels();
      return;
    }
    this.projectId = projectId;
    this.test = null;
    this.run = null;
    this.clashes = [];
    this.current = null;
    clearTimeout(this.timer);
    this.empty.hidden = Boolean(projectId);
    this.body.hidden = true; // shown once the project's models are known (the test form lists them)
    this.results.hidden = true;
    this.form.hidden = true;
    if (!projectId) {
      setText(this.heading, "");
      return;
    }
    await Promise.all([this.loadModels(), this.loadTests()]);
    if (this.projectId !== projectId) return;
    this.renderRun();
    this.body.hidden = false;
  }

  async loadModels() {
    const [federation, project] = await Promise.all([
      guarded(() => this.app.api.get(`${this.base}/federation`), "Loading the project's models failed"),
      this.app.api.get(`/chat/projects/${this.projectId}`).catch(() => null),
    ]);
    this.project = { projectId: this.projectId, title: (project && project.title) || this.projectId };
    const listed = (id) => this.app.models.models.find((m) => m.id === id);
    this.models = ((federation && federation.models) || []).map((m) => ({ ...m, name: (listed(m.modelId) || {}).name || m.modelId }));
    this.renderModels();
  }

  federatedHere() {
    return Boolean(this.app.federation && this.app.federation.projectId === this.projectId && this.app.view3d.federated);
  }

  renderModels() {
    if (!this.projectId) return;
    setText(this.heading, t("Project: {title}", { title: (this.project && this.project.title) || this.projectId }));
    const here = this.federatedHere();
    this.openButton.hidden = here || !this.models.some((m) => m.status === "ready");
    const onScreen = new Set(here ? this.app.view3d.modelIds() : []);
    replace(this.modelTable,
      h("tr", {}, h("th", { i18n: "Shown" }), h("th", { i18n: "Model" }), h("th", { i18n: "Discipline" }), h("th", { i18n: "Version" }), h("th", {})),
      this.models.length ? this.models.map((model) => {
        const shown = onScreen.has(model.modelId);
        const state = this.app.view3d.modelState(model.modelId);
        return h("tr", { "data-testid": "coord-model", dataset: { modelId: model.modelId } },
          h("td", {}, h("input", { type: "checkbox", "data-testid": "coord-model-visible", checked: shown && state.visible, disabled: !shown,
            i18nTitle: "Show or hide this model", onChange: (event) => this.setVisible(model.modelId, event.target.checked) })),
          h("td", {}, model.name, model.status !== "ready" ? h("small", { class: `status ${model.status}` }, ` ${t(model.status)}`) : null),
          h("td", { "data-testid": "coord-model-discipline" }, model.discipline || "—"),
          h("td", {}, model.version || ""),
          h("td", { class: "coord-model-actions" },
            h("button", { type: "button", class: "link", "data-testid": "coord-model-isolate", i18n: "Isolate", disabled: !shown, onClick: () => this.isolate(model.modelId) }),
            h("label", { class: "coord-xray" }, h("input", { type: "checkbox", "data-testid": "coord-model-xray", checked: shown && state.xrayed, disabled: !shown,
              onChange: (event) => this.setXrayed(model.modelId, event.target.checked) }), h("span", { i18n: "X-ray" }))));
      }) : h("tr", {}, h("td", { colspan: 5, class: "hint", i18n: "No models in this project yet." })));
  }

  async openFederation() {
    if (!(await this.app.openFederation(this.projectId))) toast(t("No ready model of this project can be shown"), "error");
    this.renderModels();
  }

  setVisible(modelId, visible) {
    this.app.view3d.setModelVisible(modelId, visible);
  }

  setXrayed(modelId, xrayed) {
    this.app.view3d.setModelXrayed(modelId, xrayed);
  }

  isolate(modelId) {
    this.app.view3d.isolateModel(modelId);
  }

  modelName(modelId) {
    const model = this.models.find((m) => m.modelId === modelId);
    return model ? [model.discipline, model.name].filter(Boolean).join(" · ") : modelId;
  }

  // --- clash tests ----------------------------------------------------------------------------------------

  async loadTests() {
    this.tests = (await guarded(() => this.app.api.get(`${this.base}/clash-tests`), "Loading the clash tests failed")) || [];
    this.renderTests();
  }

  renderTests() {
    if (!this.projectId) return;
    const describe = (test) => {
      const sides = [test.a, test.b].filter(Boolean).map((side) => (side.models || []).map((id) => this.modelName(id)).join(" + "));
      const limit = test.type === "clearance" ? ` < ${metres(test.distance || 0)}` : test.type === "hard" ? ` > ${metres(test.tolerance ?? 0.01)}` : "";
      return `${t(test.type)}${limit} · ${sides.join(" ↔ ")}${test.b ? "" : ` ${t("(against itself)")}`}${test.automatic ? ` · ${t("automatic")}` : ""}`;
    };
    replace(this.testList, this.tests.length ? this.tests.map((test) => h("li", { class: `coord-test${test.name === this.test ? " current" : ""}`, "data-testid": "coord-test", dataset: { name: test.name } },
      h("button", { type: "button", class: "link", "data-testid": "coord-test-open", onClick: () => this.chooseTest(test.name) }, test.name),
      h("small", {}, ` ${describe(test)}`),
      h("span", { class: "coord-test-actions" },
        h("button", { type: "button", "data-testid": "coord-test-run", "data-needs": "review", i18n: "Run", onClick: () => this.startRun(test.name) }),
        h("button", { type: "button", class: "link", "data-testid": "coord-test-edit", "data-needs": "edit", i18n: "Edit", onClick: () => this.editTest(test) }),
        h("button", { type: "button", class: "link", "data-testid": "coord-test-delete", "data-needs": "edit", i18n: "Delete", onClick: () => this.deleteTest(test.name) }))))
      : h("li", { class: "hint", i18n: "No clash tests yet." }));
  }

  // the test form, filled from a test (null: a new one)
  editTest(test) {
    const value = test || { name: "", type: "hard", tolerance: 0.01, distance: 0, automatic: false, a: { models: [] }, b: null };
    const side = (key, set) => h("fieldset", { class: "coord-set", "data-testid": `coord-form-${key}` },
      h("legend", { i18n: key === "a" ? "Set A" : "Set B" }),
      this.models.map((model) => h("label", { class: "coord-check" }, h("input", { type: "checkbox", name: `${key}-model`, value: model.modelId, "data-testid": `coord-form-${key}-model`,
        checked: Boolean(set && (set.models || []).includes(model.modelId)) }), this.modelName(model.modelId))),
      h("label", { class: "field" }, h("span", { i18n: "IFC classes (empty: all elements)" }),
        h("input", { name: `${key}-classes`, "data-testid": `coord-form-${key}-classes`, placeholder: "IfcElement", value: ((set && set.classes) || []).join(", ") })),
      h("label", { class: "field" }, h("span", { i18n: "Except classes" }),
        h("input", { name: `${key}-exclude`, "data-testid": `coord-form-${key}-exclude`, placeholder: "IfcFeatureElement, IfcSpace", value: ((set && set.exclude) || []).join(", ") })));
    const useB = h("input", { type: "checkbox", name: "use-b", "data-testid": "coord-form-use-b", checked: Boolean(value.b), onChange: () => { setB.hidden = !useB.checked; } });
    const setB = side("b", value.b);
    setB.hidden = !value.b;
    replace(this.form,
      h("h5", {}, test ? t("Edit {name}", { name: test.name }) : t("New clash test")),
      h("label", { class: "field" }, h("span", { i18n: "Name" }), h("input", { name: "name", "data-testid": "coord-form-name", required: true, value: value.name, readonly: Boolean(test),
        pattern: TEST_NAME.source.slice(1, -1), i18nTitle: "Letters, digits, '.', '_' and '-'; at most 64" })),
      h("label", { class: "field" }, h("span", { i18n: "Type" }), h("select", { name: "type", "data-testid": "coord-form-type" },
        TYPES.map((type) => h("option", { value: type, selected: type === value.type, i18n: type })))),
      h("label", { class: "field" }, h("span", { i18n: "Tolerance (m): overlaps up to it are no clash" }),
        h("input", { name: "tolerance", type: "number", min: 0, step: "0.001", "data-testid": "coord-form-tolerance", value: value.tolerance ?? 0.01 })),
      h("label", { class: "field" }, h("span", { i18n: "Clearance distance (m)" }),
        h("input", { name: "distance", type: "number", min: 0, step: "0.001", "data-testid": "coord-form-distance", value: value.distance ?? 0 })),
      h("label", { class: "coord-check" }, h("input", { type: "checkbox", name: "automatic", "data-testid": "coord-form-automatic", checked: Boolean(value.automatic) }),
        h("span", { i18n: "Run again whenever one of its models gets a new version" })),
      side("a", value.a),
      h("label", { class: "coord-check" }, useB, h("span", { i18n: "Against set B (else set A against itself)" })),
      setB,
      h("div", { class: "coord-form-actions" },
        h("button", { "data-testid": "coord-form-save", i18n: "Save the test" }),
        h("button", { type: "button", class: "link", i18n: "Cancel", onClick: () => { this.form.hidden = true; } })));
    this.form.hidden = false;
    this.form.elements.name.focus();
  }

  formTest() {
    const form = this.form.elements;
    const set = (key) => {
      const models = [...this.form.querySelectorAll(`input[name=${key}-model]:checked`)].map((input) => input.value);
      const classes = names(form[`${key}-classes`].value);
      const exclude = names(form[`${key}-exclude`].value);
      return { models, ...(classes.length ? { classes } : {}), ...(exclude.length ? { exclude } : {}) };
    };
    const test = { a: set("a"), type: form.type.value, tolerance: Number(form.tolerance.value), distance: Number(form.distance.value), automatic: form.automatic.checked };
    if (form["use-b"].checked) test.b = set("b");
    return test;
  }

  async saveTest() {
    const name = this.form.elements.name.value.trim();
    if (!TEST_NAME.test(name)) return toast(t("A test's name: letters, digits, '.', '_' and '-'; at most 64"), "error");
    const saved = await guarded(() => this.app.api.put(this.testPath(name), this.formTest()), t("Saving the test {name} failed", { name }));
    if (!saved) return;
    this.form.hidden = true;
    toast(t("Clash test {name} saved", { name }));
    await this.loadTests();
    await this.chooseTest(name);
  }

  async deleteTest(name) {
    if (!window.confirm(t("Delete the clash test {name} with its runs and clash history?", { name }))) return;
    if ((await guarded(() => this.app.api.delete(this.testPath(name)), "Deleting the test failed")) === undefined) return;
    if (this.test === name) {
      this.test = null;
      this.run = null;
      this.clashes = [];
      this.results.hidden = true;
      this.renderRun();
    }
    await this.loadTests();
  }

  // --- runs ------------------------------------------------------------------------------------------------

  async chooseTest(name) {
    this.test = name;
    this.renderTests();
    await this.loadRuns();
  }

  async loadRuns(runId = null) {
    const name = this.test;
    const runs = (await guarded(() => this.app.api.get(`${this.testPath(name)}/runs`), "Loading the runs failed")) || [];
    if (this.test !== name) return;
    const when = (run) => run.createdAt || run.requestedAt || run.startedAt || "";
    this.runs = [...runs].sort((a, b) => (when(a) < when(b) ? 1 : when(a) > when(b) ? -1 : 0));
    const chosen = this.runs.find((run) => run.runId === runId) || this.runs[0] || null;
    await this.showRun(chosen);
  }

  async showRun(run) {
    clearTimeout(this.timer);
    this.run = run;
    this.current = null;
    this.renderRun();
    if (!run) {
      this.clashes = [];
      this.results.hidden = true;
      return;
    }
    if (finished(run)) {
      await this.loadClashes();
    } else {
      this.results.hidden = true;
      this.timer = setTimeout(() => this.poll(), POLL_MS);
    }
  }

  async poll() {
    const run = this.run;
    if (!run) return;
    let fresh;
    try {
      fresh = await this.app.api.get(this.runPath(run.runId));
    } catch (error) {
      this.app.setOffline(error instanceof TypeError);
      this.timer = setTimeout(() => this.poll(), POLL_MS * 3);
      return;
    }
    if (this.run !== run) return; // another run or test was chosen meanwhile
    this.run = { ...run, ...fresh, runId: run.runId };
    const index = this.runs.findIndex((r) => r.runId === run.runId);
    if (index >= 0) this.runs[index] = this.run;
    this.renderRun();
    if (finished(this.run)) await this.loadClashes();
    else this.timer = setTimeout(() => this.poll(), POLL_MS);
  }

  async startRun(name) {
    this.test = name;
    this.renderTests();
    const started = await guarded(() => this.app.api.post(`${this.testPath(name)}/runs`, {}), t("Running the test {name} failed", { name }));
    if (!started) return;
    await this.loadRuns(started.runId);
    if (!this.run || this.run.runId !== started.runId) await this.showRun(started);
  }

  async cancelRun() {
    const run = this.run;
    const answer = await guarded(() => this.app.api.post(`${this.runPath(run.runId)}/cancel`, {}), "Cancelling the run failed");
    if (answer === undefined) return;
    toast(t("Run {id} cancelled", { id: run.runId }));
    clearTimeout(this.timer);
    this.poll();
  }

  renderRun() {
    if (!this.test) {
      replace(this.runBox, h("p", { class: "hint", i18n: "Choose a clash test, or run one." }));
      return;
    }
    const run = this.run;
    const select = h("select", { "data-testid": "coord-run-select", onChange: (event) => this.showRun(this.runs.find((r) => r.runId === event.target.value) || null) },
      this.runs.map((r) => h("option", { value: r.runId, selected: run && r.runId === run.runId }, `${r.runId} · ${t(r.status)}${r.createdAt ? ` · ${new Date(r.createdAt).toLocaleString()}` : ""}`)));
    if (!run) {
      replace(this.runBox, h("p", { class: "hint" }, t("{name} has not run yet.", { name: this.test })));
      return;
    }
    const percent = percentOf(run.progress);
    const summary = run.summary || {};
    replace(this.runBox,
      h("p", {}, h("strong", {}, this.test), " ", this.runs.length > 1 ? select : h("code", {}, run.runId)),
      h("p", { class: `coord-run-status ${run.status}`, "data-testid": "coord-run-status", dataset: { status: run.status } },
        t(run.status), finished(run) ? "" : ` ${phaseOf(run.progress)} ${percent}%`),
      !finished(run) && h("div", { class: "progress" }, h("div", { class: "bar", style: `width:${percent}%` })),
      !finished(run) && h("button", { type: "button", "data-testid": "coord-run-cancel", "data-needs": "review", i18n: "Cancel the run", onClick: () => this.cancelRun() }),
      run.status === "failed" && h("p", { class: "error", "data-testid": "coord-run-error" }, run.error || ""),
      run.status === "done" && h("p", { class: "coord-summary", "data-testid": "coord-run-summary" },
        SUMMARY_KEYS.map((key) => h("span", { class: `count ${key}` }, `${t(key)} ${summary[key] ?? 0}`))),
      (run.models || []).length > 0 && h("p", { class: "hint" }, t("Models: {list}", { list: run.models.map((m) => `${this.modelName(m.modelId)} ${m.version}`).join(", ") })));
  }

  // --- clashes ---------------------------------------------------------------------------------------------

  async loadClashes() {
    const run = this.run;
    if (!run || run.status !== "done") {
      this.results.hidden = true;
      return;
    }
    const query = new URLSearchParams();
    if (this.statusSelect.value) query.set("status", this.statusSelect.value);
    if (this.groupSelect.value) query.set("group", this.groupSelect.value);
    const clashes = await guarded(() => this.app.api.get(`${this.runPath(run.runId)}/clashes${query.toString() ? `?${query}` : ""}`), "Loading the clashes failed");
    if (this.run !== run || !clashes) return;
    this.clashes = clashes;
    this.results.hidden = false;
    this.renderClashes();
  }

  // the clashes in the order listed: grouped ones together, groups in the order of their first clash
  ordered() {
    if (!this.groupSelect.value) return this.clashes;
    const groups = new Map();
    for (const clash of this.clashes) {
      const key = String(clash.groupId ?? "");
      if (!groups.has(key)) groups.set(key, []);
      groups.get(key).push(clash);
    }
    return [...groups.values()].flat();
  }

  renderClashes() {
    if (!this.run) return;
    const ordered = this.ordered();
    setText(this.clashCount, t("{count} clash(es)", { count: ordered.length }));
    const side = (fact) => `${fact.type} ${fact.name || fact.guid}`;
    const measure = (clash) => (clash.depth !== undefined && clash.depth !== null ? t("depth {value}", { value: metres(clash.depth) })
      : clash.distance !== undefined && clash.distance !== null ? t("distance {value}", { value: metres(clash.distance) }) : "");
    const items = [];
    let group = null;
    for (const clash of ordered) {
      const key = String(clash.groupId ?? "");
      if (this.groupSelect.value && key !== group) {
        group = key;
        items.push(h("li", { class: "coord-group-head", "data-testid": "coord-group-head" },
          t("Group {id}: {count}", { id: key || "—", count: ordered.filter((c) => String(c.groupId ?? "") === key).length })));
      }
      items.push(h("li", { class: `coord-clash ${clash.status}${clash.clashId === this.current ? " current" : ""}`, "data-testid": "coord-clash",
        dataset: { clashId: clash.clashId, status: clash.status } },
        h("button", { type: "button", class: "link", onClick: () => this.show(clash.clashId) },
          h("span", { class: `status ${clash.status}` }, t(clash.status)), " ",
          h("span", { class: "side a" }, side(clash.a)), " ↔ ", h("span", { class: "side b" }, side(clash.b))),
        h("small", {}, ` ${measure(clash)}${clash.a.storey ? ` · ${clash.a.storey}` : ""}`,
          clash.reviewStatus ? ` · ${t(clash.reviewStatus)}` : "", clash.assignedTo ? ` · @${clash.assignedTo}` : "")));
    }
    replace(this.clashList, items.length ? items : h("li", { class: "hint", i18n: "No clashes." }));
    this.renderDetail();
  }

  clash(clashId = this.current) {
    return this.clashes.find((c) => c.clashId === clashId) || null;
  }

  // the clash in 3D: the project federated first when it is not on screen
  async show(clashId) {
    const clash = this.clash(clashId);
    if (!clash) return;
    this.current = clashId;
    if (!this.federatedHere() && !(await this.app.openFederation(this.projectId))) {
      toast(t("The project's models could not be shown together"), "error");
      return;
    }
    if (this.current !== clashId) return;
    const shown = this.app.view3d.showClash(clash);
    if (shown.length < 2) toast(t("{count} of the clash's two elements are on screen (a model not shown, or an element gone)", { count: shown.length }));
    this.renderClashes();
    const item = this.clashList.querySelector(`[data-clash-id="${clashId}"]`);
    if (item) item.scrollIntoView({ block: "nearest" });
  }

  step(direction) {
    const ordered = this.ordered();
    if (!ordered.length) return;
    const index = ordered.findIndex((c) => c.clashId === this.current);
    const next = index < 0 ? (direction > 0 ? 0 : ordered.length - 1) : (index + direction + ordered.length) % ordered.length;
    this.show(ordered[next].clashId);
  }

  renderDetail() {
    const clash = this.clash();
    this.detail.hidden = !clash;
    if (!clash) return;
    const fact = (key, side) => h("tr", { class: `side ${key}` },
      h("th", {}, h("i", { class: "swatch", style: `background:${rgb(CLASH_COLOURS[key])}` }), key.toUpperCase()),
      h("td", {}, `${side.type} · ${side.name || ""}`, h("br"), h("small", {}, `${this.modelName(side.modelId)} · ${side.guid}${side.storey ? ` · ${side.storey}` : ""}`)));
    const review = h("select", { name: "reviewStatus", "data-testid": "coord-review-status" },
      REVIEW_STATUSES.map((status) => h("option", { value: status, selected: status === (clash.reviewStatus || ""), i18n: status || "not reviewed" })));
    const assignee = h("input", { name: "assignedTo", "data-testid": "coord-assigned-to", value: clash.assignedTo || "", i18nPlaceholder: "assignee (user name)" });
    replace(this.detail,
      h("p", { "data-testid": "coord-clash-id" }, h("code", {}, clash.clashId), ` · ${t(clash.status)}`),
      h("table", {}, fact("a", clash.a), fact("b", clash.b),
        h("tr", {}, h("th", { i18n: "Point" }), h("td", {}, clash.point.map((v) => Number(v).toFixed(3)).join(", "))),
        clash.depth !== undefined && clash.depth !== null && h("tr", {}, h("th", { i18n: "Depth" }), h("td", {}, metres(clash.depth))),
        clash.distance !== undefined && clash.distance !== null && h("tr", {}, h("th", { i18n: "Distance" }), h("td", {}, metres(clash.distance)))),
      h("form", { class: "coord-review", "data-needs": "review", onSubmit: (event) => { event.preventDefault(); this.review(clash.clashId, review.value, assignee.value.trim()); } },
        review, assignee, h("button", { "data-testid": "coord-clash-save", i18n: "Save" })));
  }

  async review(clashId, reviewStatus, assignedTo) {
    const changed = await guarded(() => this.app.api.patch(`${this.runPath()}/clashes/${clashId}`, { reviewStatus, assignedTo }), "Saving the clash failed");
    if (!changed) return;
    const index = this.clashes.findIndex((c) => c.clashId === clashId);
    if (index >= 0) this.clashes[index] = { ...this.clashes[index], ...changed };
    toast(t("Clash saved"));
    this.renderClashes();
  }

  async downloadReport() {
    const run = this.run;
    const blob = await guarded(() => this.app.api.blob(`${this.runPath(run.runId)}/report.bcfzip`), "Downloading the BCF report failed");
    if (!blob) return;
    const link = h("a", { href: URL.createObjectURL(blob), download: `${this.test}-${run.runId}.bcfzip` });
    link.click();
    setTimeout(() => URL.revokeObjectURL(link.href), 60_000);
  }

  // more new issues than the server's threshold need confirm: the user is asked, with their count (40001 naming
  // confirm, data {issues, confirmAbove}), and told that pinning per group makes fewer
  async pin() {
    const per = this.pinPer.value;
    const body = per === "group" ? { per, group: this.groupSelect.value || "by-proximity:1" } : { per };
    const url = `${this.runPath()}/issues`;
    let answer;
    try {
      answer = await this.app.api.post(url, body);
    } catch (error) {
      const count = error instanceof ApiError && error.data && error.data.field === "confirm" && error.data.issues;
      if (!count) {
        toast(`${t("Pinning the clashes failed")}: ${errorText(error)}`, "error");
        return;
      }
      const advice = per === "group" ? t("A coarser grouping makes fewer.") : t("Pinning one issue per group makes fewer.");
      if (!window.confirm(`${t("Pin {count} new issues?", { count })} ${advice}`)) return;
      answer = await guarded(() => this.app.api.post(url, { ...body, confirm: true }), t("Pinning the clashes failed"));
    }
    if (!answer) return;
    toast(PIN_KINDS.map((kind) => `${t(kind)} ${count(answer[kind])}`).join(" · "));
    this.app.issues.load();
  }
}
