// Automated review in its own tab: the project's IDS files (upload, replace, delete), a check of the model (a saved
// version or the current product, optionally with the property overrides) against some of them or against IDS files
// from disk, its progress while queued or running (polled), and the result: per specification pass or fail with its
// applicable count, the failing elements with requirement, value found and value expected. A click on a failing
// element selects it and flies to it in 3D; "Select all failing" selects them together; "Pin as issues" turns the
// failures into review issues (deduplicated across re-checks): one per failing specification, its failing elements
// selected and framed by its viewpoint, or, when chosen, one per failing element (more than the server's threshold
// asks for a confirmation first); the HTML report and the BCF archives (one topic per element or per specification)
// are a click away.
//
// Updates by key: the check list and the result's specifications keep their elements (an opened failure table stays
// open) while a running check is polled.
//
// Uploading, replacing and deleting IDS files, starting a check and pinning need the review capability (account.js
// hides those controls without it; the hint says why): reading the checks and their reports does not.
import { rightsHint } from "./account.js";
import { t } from "./i18n.js";
import { userName } from "./issue_fields.js";
import { ApiError } from "./api.js";
import { errorText, guarded, h, replace, setText, syncKeyed, toast } from "./ui.js";

const POLL_MS = 1000;
const ROWS_SHOWN = 200; // failure rows drawn at first per specification ("Show all" draws the rest)
const IDS_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;
const PIN_KINDS = ["created", "reopened", "resolved", "unchanged"];
const SNAPSHOTS_MAX = 20; // new pinned issues given a snapshot of their viewpoint, per pin

// the API's IDS file name for a file from disk: other characters become "_" (as the server does for uploads)
export function idsName(fileName) {
  const name = fileName.replace(/[^A-Za-z0-9._-]/g, "_").replace(/\.\.+/g, ".").replace(/^[^A-Za-z0-9]+/, "").slice(0, 100);
  return IDS_NAME.test(name) ? name : null;
}

function finished(check) {
  return check.status === "done" || check.status === "failed";
}

export class ChecksPanel {
  constructor(app) {
    this.app = app;
    this.root = document.getElementById("tab-checks");
    this.modelId = null;
    this.timer = null;
  }

  get base() {
    return `/models/${this.modelId}`;
  }

  async load() {
    if (!this.app.model) return;
    if (this.modelId !== this.app.model.id) {
      this.modelId = this.app.model.id;
      this.shown = null;
      this.projectId = null;
      this.layout();
    }
    const modelId = this.modelId;
    // a model's project is the one of its chat session (the project's session for a model of a project)
    const session = await guarded(() => this.app.api.post("/chat/sessions", { title: this.app.model.name, modelId }), "Finding the model's project failed");
    if (modelId !== this.modelId) return;
    this.projectId = session ? session.projectId : null;
    await Promise.all([this.loadIdsFiles(), this.loadVersions(), this.refresh()]);
  }

  layout() {
    clearTimeout(this.timer);
    this.idsList = h("ul", { class: "ids-list", "data-testid": "ids-file-list" });
    this.idsHint = h("p", { class: "hint", "data-testid": "ids-hint" });
    this.idsUpload = h("label", { class: "button", "data-needs": "review" }, h("span", { i18n: "Upload IDS…" }),
      h("input", { type: "file", accept: ".ids,.xml,application/xml", multiple: true, hidden: true, "data-testid": "ids-upload", onChange: (event) => this.uploadIds(event.target) }));
    this.version = h("select", { "data-testid": "check-version" });
    this.overrides = h("input", { type: "checkbox", "data-testid": "check-overrides" });
    this.runButton = h("button", { type: "button", "data-testid": "check-run", i18n: "Check the selected IDS files", onClick: () => this.runSelected() });
    this.checkList = h("ul", { class: "check-list", "data-testid": "check-list" });
    this.checksHint = h("p", { class: "hint", i18n: "No checks yet." });
    this.result = h("div", { class: "check-result", "data-testid": "check-result" });
    replace(this.root,
      rightsHint("review", "Your role here may only read: running checks and changing the IDS files need the reviewer role in this project.", "checks-read-only"),
      h("section", { class: "ids-files" },
        h("h4", { i18n: "IDS files of the project" }), this.idsHint, this.idsList, this.idsUpload),
      h("section", { class: "check-form", "data-needs": "review" },
        h("h4", { i18n: "Check the model" }),
        h("div", { class: "toolbar" },
          h("label", {}, h("span", { i18n: "Version" }), " ", this.version),
          h("label", {}, this.overrides, " ", h("span", { i18n: "include property overrides" }))),
        h("div", { class: "toolbar" }, this.runButton,
          h("label", { class: "button" }, h("span", { i18n: "Check with IDS files from disk…" }),
            h("input", { type: "file", accept: ".ids,.xml,application/xml", multiple: true, hidden: true, "data-testid": "check-run-files", onChange: (event) => this.runFiles(event.target) })))),
      h("section", {}, h("h4", { i18n: "Checks" }), this.checkList, this.checksHint),
      this.result);
  }

  // --- IDS files -------------------------------------------------------------------------------------------------

  async loadIdsFiles() {
    this.idsUpload.hidden = !this.projectId;
    if (!this.projectId) {
      this.idsFiles = [];
      this.idsHint.dataset.i18n = "This model belongs to no project, where IDS files are kept: check it with IDS files from disk.";
      setText(this.idsHint, t(this.idsHint.dataset.i18n));
      this.idsHint.hidden = false;
      this.renderIdsFiles();
      return;
    }
    const modelId = this.modelId;
    const files = await guarded(() => this.app.api.get(`/projects/${this.projectId}/ids`), "Loading the IDS files failed");
    if (modelId !== this.modelId || !files) return;
    this.idsFiles = files;
    this.idsHint.dataset.i18n = this.app.account.can("review") ? "No IDS files yet: upload one." : "No IDS files yet.";
    setText(this.idsHint, t(this.idsHint.dataset.i18n));
    this.idsHint.hidden = files.length > 0;
    this.renderIdsFiles();
  }

  renderIdsFiles() {
    syncKeyed(this.idsList, this.idsFiles, (file) => file.name, (file) => this.idsItem(file), (element, file) => {
      const text = t("{title} · {count} specifications · {date}", { title: file.title || "—", count: file.specifications, date: new Date(file.updatedAt).toLocaleString() });
      setText(element.querySelector(".meta"), text);
    });
    this.runButton.disabled = !this.idsFiles.length;
  }

  idsItem(file) {
    return h("li", { class: "ids-file", dataset: { testid: "ids-file", name: file.name } },
      h("label", {}, h("input", { type: "checkbox", checked: true, "data-testid": "ids-file-use", "data-needs": "review", value: file.name }), " ", h("strong", {}, file.name)),
      h("small", { class: "meta" }),
      h("span", { class: "toolbar", "data-needs": "review" },
        h("label", { class: "button small" }, h("span", { i18n: "Replace…" }),
          h("input", { type: "file", accept: ".ids,.xml,application/xml", hidden: true, "data-testid": "ids-file-replace", onChange: (event) => this.replaceIds(file.name, event.target) })),
        h("button", { type: "button", class: "danger small", i18n: "Delete", "data-testid": "ids-file-delete", onClick: () => this.deleteIds(file.name) })));
  }

  async putIds(name, file) {
    const saved = await guarded(() => this.app.api.putBody(`/projects/${this.projectId}/ids/${encodeURIComponent(name)}`, file, "application/xml"), t("Uploading {name} failed", { name }));
    if (saved) toast(t(saved.created ? "{name} uploaded: {count} specifications" : "{name} replaced: {count} specifications", { name, count: saved.specifications }));
    return saved;
  }

  async uploadIds(input) {
    const files = [...input.files];
    input.value = "";
    for (const file of files) {
      const name = idsName(file.name);
      if (!name) {
        toast(t("{name} is no usable IDS file name", { name: file.name }), "error");
        continue;
      }
      if (this.idsFiles.some((known) => known.name === name) && !window.confirm(t("Replace the project's {name}?", { name }))) continue;
      await this.putIds(name, file);
    }
    await this.loadIdsFiles();
  }

  async replaceIds(name, input) {
    const file = input.files[0];
    input.value = "";
    if (file && await this.putIds(name, file)) await this.loadIdsFiles();
  }

  async deleteIds(name) {
    if (!window.confirm(t("Delete the project's {name}? Checks keep the contents they ran with.", { name }))) return;
    if ((await guarded(() => this.app.api.delete(`/projects/${this.projectId}/ids/${encodeURIComponent(name)}`), "Deleting the IDS file failed")) === undefined) return;
    await this.loadIdsFiles();
  }

  // --- starting a check ---------------------------------------------------------------------------------------

  async loadVersions() {
    const modelId = this.modelId;
    const versions = await this.app.api.get(`${this.base}/edit/versions`).catch(() => null); // an uploaded IFC has none
    if (modelId !== this.modelId) return;
    const names = versions ? versions.versions.map((v) => v.version).reverse() : [];
    const chosen = this.version.value || "current";
    replace(this.version, h("option", { value: "current", i18n: "current product" }), names.map((name) => h("option", { value: name }, name)));
    this.version.value = [...this.version.options].some((option) => option.value === chosen) ? chosen : "current";
  }

  async start(body, form = false) {
    const started = await guarded(() => (form ? this.app.api.upload(`${this.base}/checks`, body) : this.app.api.post(`${this.base}/checks`, body)), "Starting the check failed");
    if (!started) return;
    if (started.cached) toast(t("The same check exists already: shown"));
    this.shown = started.checkId;
    await this.refresh();
  }

  runSelected() {
    const names = [...this.idsList.querySelectorAll("[data-testid=ids-file-use]:checked")].map((box) => box.value);
    if (!names.length) {
      toast(t("Select at least one IDS file"), "error");
      return;
    }
    this.start({ ids: names, version: this.version.value, includeOverrides: this.overrides.checked });
  }

  runFiles(input) {
    const files = [...input.files];
    input.value = "";
    if (!files.length) return;
    const form = new FormData();
    for (const file of files) form.append("ids", file, file.name);
    form.append("version", this.version.value);
    form.append("includeOverrides", this.overrides.checked ? "true" : "false");
    this.start(form, true);
  }

  // --- the checks and their progress ------------------------------------------------------------------------

  // the list, and the shown check's record; polled while any check is queued or running
  async refresh() {
    clearTimeout(this.timer);
    const modelId = this.modelId;
    const checks = await guarded(() => this.app.api.get(`${this.base}/checks`), "Loading the checks failed");
    if (modelId !== this.modelId) return;
    if (!checks) {
      // a poll that failed (a restart, a busy server) must not leave a running check on screen forever
      if (this.checks && this.checks.some((check) => !finished(check))) this.timer = setTimeout(() => this.refresh(), POLL_MS * 4);
      return;
    }
    this.checks = checks;
    if (!this.shown && checks.length) this.shown = checks[0].checkId;
    this.renderChecks();
    if (this.shown) {
      const record = this.record && this.record.checkId === this.shown && finished(this.record) ? this.record
        : await guarded(() => this.app.api.get(`${this.base}/checks/${this.shown}`), "Loading the check failed");
      if (modelId !== this.modelId) return;
      if (record) this.showRecord(record);
    }
    if (checks.some((check) => !finished(check)) && this.app.model && this.app.model.id === modelId) {
      this.timer = setTimeout(() => this.refresh(), POLL_MS);
    }
  }

  renderChecks() {
    syncKeyed(this.checkList, this.checks, (check) => check.checkId,
      (check) => h("li", { class: "check", dataset: { testid: "check-item", checkId: check.checkId }, onClick: () => this.show(check.checkId) }),
      (element, check) => {
        element.classList.toggle("current", check.checkId === this.shown);
        element.dataset.status = check.status;
        const summary = check.summary && check.status === "done"
          ? t("{passed} of {specifications} passed · {failures} failure(s)", { passed: check.summary.passed, specifications: check.summary.specifications, failures: check.summary.failures ?? 0 })
          : check.status === "failed" ? t("failed") : `${t(check.status)} · ${check.progress.phase} ${check.progress.percent}%`;
        const text = [new Date(check.createdAt).toLocaleString(), check.ids.map((ids) => ids.name).join(", "), check.version, check.includeOverrides ? t("with overrides") : "", summary].filter(Boolean).join(" · ");
        setText(element, text);
      });
    this.checksHint.hidden = this.checks.length > 0;
  }

  async show(checkId) {
    this.shown = checkId;
    this.record = null;
    await this.refresh();
  }

  // --- the result ------------------------------------------------------------------------------------------------

  showRecord(record) {
    const fresh = !this.record || this.record.checkId !== record.checkId;
    this.record = record;
    if (fresh) this.buildResult(record);
    this.renderResult(record);
  }

  buildResult(record) {
    this.progress = h("div", { class: "progress", "data-testid": "check-progress" }, h("div", { class: "bar" }), h("span"));
    this.summary = h("p", { class: "check-summary", "data-testid": "check-summary" });
    this.error = h("p", { class: "error", "data-testid": "check-error", hidden: true });
    this.pinResult = h("div", { class: "pin-result", "data-testid": "check-pin-result", hidden: true });
    this.actions = h("div", { class: "toolbar", hidden: true },
      h("button", { type: "button", "data-testid": "check-select-all", i18n: "Select all failing", onClick: () => this.selectFailing(this.allFailures()) }),
      h("button", { type: "button", "data-testid": "check-pin", "data-needs": "review", i18n: "Pin as issues", onClick: () => this.pin() }),
      this.pinMode = h("select", { "data-testid": "check-pin-mode", "data-needs": "review", "aria-label": t("Pin as issues") },
        h("option", { value: "specification", i18n: "one per specification" }), h("option", { value: "element", i18n: "one per element" })),
      h("a", { href: `/api/v1${this.base}/checks/${record.checkId}/report.html`, target: "_blank", rel: "noopener", class: "button", "data-testid": "check-report-html", i18n: "HTML report",
        onClick: (event) => this.openReport(event) }),
      h("button", { type: "button", "data-testid": "check-bcf-element", i18n: "BCF per element", onClick: () => this.downloadBcf("element") }),
      h("button", { type: "button", "data-testid": "check-bcf-specification", i18n: "BCF per specification", onClick: () => this.downloadBcf("specification") }));
    this.specList = h("ul", { class: "spec-list", "data-testid": "spec-list" });
    replace(this.result, h("h4", { i18n: "Result" }), this.progress, this.summary, this.error, this.actions, this.pinResult, this.specList);
  }

  renderResult(record) {
    const running = !finished(record);
    this.progress.hidden = !running;
    if (running) {
      this.progress.firstChild.style.width = `${record.progress.percent}%`;
      setText(this.progress.lastChild, `${t(record.status)} · ${record.progress.phase} ${record.progress.percent}%`);
    }
    this.error.hidden = record.status !== "failed";
    setText(this.error, record.status === "failed" ? t("The check failed: {error}", { error: record.error }) : "");
    const result = record.result;
    this.actions.hidden = record.status !== "done" || !result;
    if (!result) {
      setText(this.summary, running ? t("Checking {version} against {ids}…", { version: record.version, ids: record.ids.map((ids) => ids.name).join(", ") }) : "");
      this.specList.replaceChildren();
      return;
    }
    const { summary } = result;
    const onScreen = this.app.onScreen && this.app.onScreen.version;
    const elsewhere = record.version !== "current" && onScreen !== record.version;
    setText(this.summary, [
      t("{version} against {ids}: {passed} of {specifications} specifications pass, {failed} fail ({failures} failing element(s))", {
        version: record.version, ids: record.ids.map((ids) => ids.name).join(", "), passed: summary.passed, specifications: summary.specifications,
        failed: summary.failed, failures: summary.failures ?? 0 }),
      record.includeOverrides ? t("Property overrides included.") : "",
      elsewhere ? t("The view does not show {version}: elements are found in it by GlobalId.", { version: record.version }) : "",
    ].filter(Boolean).join(" "));
    // failing specifications first, each group in the IDS files' order
    const specifications = [...result.specifications.filter((spec) => spec.status !== "pass"), ...result.specifications.filter((spec) => spec.status === "pass")];
    syncKeyed(this.specList, specifications, (spec) => `${spec.ids}\n${spec.name}\n${spec.identifier || ""}`,
      (spec) => this.specItem(spec), (element, spec) => this.updateSpecItem(element, spec));
  }

  specItem(spec) {
    return h("li", { class: `spec ${spec.status}`, dataset: { testid: "spec-item", status: spec.status } },
      h("div", { class: "spec-head" },
        h("span", { class: `spec-status ${spec.status}`, "data-testid": "spec-status", i18n: spec.status === "pass" ? "pass" : "fail" }),
        h("strong", { "data-testid": "spec-name" }, spec.name),
        h("small", { class: "meta", "data-testid": "spec-counts" }),
        spec.failures.length > 0 && h("button", { type: "button", class: "small", "data-testid": "spec-select", i18n: "Select failing", onClick: () => this.selectFailing(spec.failures) })),
      spec.description && h("p", { class: "meta" }, spec.description),
      spec.status === "fail" && !spec.failures.length && spec.reason && h("p", { class: "meta" }, spec.reason),
      spec.failures.length > 0 && h("details", { open: true }, h("summary", { i18n: "Failing elements" }), this.failureTable(spec, ROWS_SHOWN)));
  }

  updateSpecItem(element, spec) {
    setText(element.querySelector("[data-testid=spec-counts]"), [
      t("{count} applicable", { count: spec.applicable }),
      spec.failureCount ? t("{count} failing", { count: spec.failedElements ?? spec.failureCount }) : "",
      spec.truncated ? t("(first {count} listed)", { count: spec.failures.length }) : "",
    ].filter(Boolean).join(" · "));
  }

  failureTable(spec, limit) {
    const rows = spec.failures.slice(0, limit);
    const table = h("table", { class: "failures" },
      h("thead", {}, h("tr", {}, ["Element", "Requirement", "Found", "Expected"].map((label) => h("th", { i18n: label })))),
      h("tbody", {}, rows.map((failure) => {
        const present = this.app.view.has ? this.app.view.has(failure.guid) : false;
        return h("tr", { class: present ? "" : "absent", dataset: { testid: "failure-row", guid: failure.guid }, onClick: () => this.flyTo(failure) },
          h("td", {}, h("button", { type: "button", class: "link", disabled: !present }, failure.name || failure.guid), h("br"), h("small", { class: "meta" }, `${failure.type} · ${failure.guid}`),
            !present && h("small", { class: "meta" }, ` (${t("not in the view")})`)),
          h("td", {}, failure.requirement), h("td", { "data-testid": "failure-found" }, failure.found), h("td", {}, failure.expected));
      })));
    if (spec.failures.length <= limit) return table;
    return h("div", {}, table, h("button", { type: "button", class: "link", onClick: (event) => event.target.parentElement.replaceWith(this.failureTable(spec, Infinity)) },
      t("Show all {count}", { count: spec.failures.length })));
  }

  allFailures() {
    return (this.record && this.record.result ? this.record.result.specifications : []).flatMap((spec) => spec.failures);
  }

  flyTo(failure) {
    const view = this.app.view;
    if (!view.flyToObject || !view.flyToObject(failure.guid)) toast(t("{name} is not in the view", { name: failure.name || failure.guid }));
  }

  selectFailing(failures) {
    const guids = [...new Set(failures.map((failure) => failure.guid).filter(Boolean))];
    const selected = this.app.view.selectMany ? this.app.view.selectMany(guids) : [];
    toast(t("{selected} of {count} failing elements selected", { selected: selected.length, count: guids.length }));
  }

  // per element, the server refuses more new issues than its threshold without confirm: the user is asked, with its count
  async pin() {
    const author = userName();
    const body = { per: this.pinMode.value, ...(author ? { author } : {}) };
    const url = `${this.base}/checks/${this.record.checkId}/issues`;
    let pinned;
    try {
      pinned = await this.app.api.post(url, body);
    } catch (error) {
      const count = error instanceof ApiError && error.data && error.data.issues;
      if (!count) return toast(`${t("Pinning the failures failed")}: ${errorText(error)}`, "error");
      if (!window.confirm(t("Pin {count} issues, one per failing element?", { count }))) return undefined;
      pinned = await guarded(() => this.app.api.post(url, { ...body, confirm: true }), "Pinning the failures failed");
    }
    if (!pinned) return undefined;
    replace(this.pinResult,
      h("p", { "data-testid": "check-pin-counts" }, t("Issues: {created} created, {reopened} reopened, {resolved} resolved, {unchanged} unchanged",
        Object.fromEntries(PIN_KINDS.map((kind) => [kind, pinned[kind].length])))),
      h("ul", {}, PIN_KINDS.flatMap((kind) => pinned[kind].map((entry) => h("li", { class: kind, dataset: { issueId: entry.issueId } },
        `${t(kind)}: ${entry.issueId} · ${entry.specification}${entry.guid ? ` · ${entry.guid}` : entry.elements ? ` · ${t("{count} element(s)", { count: entry.elements })}` : ""}`)))));
    this.pinResult.hidden = false;
    await this.app.issues.load();
    return this.snapshotPinned(pinned.created);
  }

  // the server cannot render: each new issue's viewpoint gets the view it frames as its snapshot (the list's
  // thumbnail), then the view the user had is put back
  async snapshotPinned(entries) {
    const view = this.app.view;
    const panel = this.app.issues;
    const issues = entries.slice(0, SNAPSHOTS_MAX).map((entry) => panel.issues.find((issue) => issue.id === entry.issueId))
      .filter((issue) => issue && issue.viewpoints.length && !issue.viewpoints[0].snapshot);
    if (!issues.length || !view.applyViewpoint || !view.viewpoint) return;
    const before = view.viewpoint();
    for (const issue of issues) {
      const [first, ...others] = issue.viewpoints;
      view.applyViewpoint(first);
      await new Promise((resolve) => requestAnimationFrame(resolve));
      const snapshot = { snapshot_type: "png", snapshot_data: view.snapshotDataURL() };
      await panel.update(issue, { viewpoints: [{ ...first, snapshot }, ...others] }, "Saving the snapshot failed");
    }
    view.applyViewpoint(before);
  }

  // the report needs the token when one is set, which a plain link cannot send: then it is fetched and shown from memory
  async openReport(event) {
    if (!this.app.api.token) return; // the link opens it
    event.preventDefault();
    const { href } = event.currentTarget;
    const tab = window.open("", "_blank");
    try {
      const blob = await (await this.app.api.file(href)).blob();
      tab.location = URL.createObjectURL(blob);
    } catch (error) {
      tab.close();
      toast(t("Opening the report failed: {error}", { error: errorText(error) }), "error");
    }
  }

  async downloadBcf(per) {
    const blob = await guarded(() => this.app.api.blob(`${this.base}/checks/${this.record.checkId}/report.bcfzip?per=${per}`), "Downloading the BCF failed");
    if (!blob) return;
    const link = h("a", { href: URL.createObjectURL(blob), download: `${this.record.checkId}-${per}.bcfzip` });
    link.click();
    setTimeout(() => URL.revokeObjectURL(link.href), 1000);
  }

  relabel() {
    if (this.checks) this.renderChecks();
    if (this.record) {
      const record = this.record;
      this.record = null;
      this.showRecord(record);
    }
  }
}
