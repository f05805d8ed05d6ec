// Review issues: pin one to the picked element, or with nothing picked a general one about the current view, with
// the current view as its BCF viewpoint (camera, visibility, colours, section planes, selection) and a screenshot; search and filter the list; open an issue in the detail view
// (issue_detail.js: its viewpoints applied, fields, comments); exchange them with other tools as BCF 3.0.
//
// Filters: the fields the API filters on (status, priority, assignee, type, stage, label, text) are sent to
// GET issues, which answers the matching ids; source, author and class, which the API has no filter for, are applied
// here. The list shows the loaded issues (so an edit shows at once) in the order and membership the server answered.
//
// Everything updates by key: the new-issue form is built once per model (picking only changes its heading, so a
// half-typed issue survives), list items are keyed by issue id and only redrawn when the issue's updatedAt changes.
//
// Writing issues (new, status, delete, BCF import) needs the review capability: account.js hides those controls
// without it, the hint says why, and the status shows as text instead of its select.
import { rightsHint } from "./account.js";
import { t } from "./i18n.js";
import { IssueDetail } from "./issue_detail.js";
import {
  DEFAULT_AUTHOR, IDS_LABEL, READ_ONLY_HINT, STATUSES, SUGGESTIONS, USER_KEY, fieldOptions, formatDate, issueElements, issueSource, labelsFrom, overdue, userName,
} from "./issue_fields.js";
import { guarded, h, replace, setText, syncKeyed, toast } from "./ui.js";

const SEARCH_DELAY_MS = 250;

// [name, label of "any", values of an issue]; API filters are query parameters of GET issues
const API_FILTERS = [
  ["status", "all statuses", (issue) => [issue.status], STATUSES],
  ["priority", "all priorities", (issue) => [issue.priority]],
  ["assignedTo", "all assignees", (issue) => [issue.assignedTo]],
  ["topicType", "all types", (issue) => [issue.topicType]],
  ["stage", "all stages", (issue) => [issue.stage]],
  ["label", "all labels", (issue) => issue.labels || []],
];
const LOCAL_FILTERS = [
  ["source", "all sources", (issue) => [issueSource(issue)]],
  ["author", "all authors", (issue) => [issue.author]],
  ["entityType", "all classes", (issue) => [issue.entityType]],
];
const FILTERS = [...API_FILTERS, ...LOCAL_FILTERS];

export class IssuesPanel {
  constructor(app) {
    this.app = app;
    this.root = document.getElementById("tab-issues");
    this.issues = [];
    this.filters = {};
    this.query = "";
    this.matching = null; // ids the API answered for the API filters (in its order), null when none is set
    this.requests = 0;
    this.layout();
    this.detail = new IssueDetail(this, this.detailView);
  }

  layout() {
    this.formHeading = h("h4", { "data-testid": "issue-heading" });
    this.createButton = h("button", { "data-testid": "create-issue", i18n: "Pin issue with the current view", disabled: true });
    this.datalists = Object.fromEntries(Object.keys(SUGGESTIONS).map((field) => [field, h("datalist", { id: `issue-options-${field}` })]));
    const field = (name, label, attributes = {}) => h("label", { class: "form-field" }, h("span", { i18n: label }),
      h("input", { name, list: this.datalists[name] ? this.datalists[name].id : null, "data-testid": `new-issue-${name}`, ...attributes }));
    this.form = h("form", { class: "new-issue", "data-needs": "review", onSubmit: (event) => { event.preventDefault(); this.create(event.target); } },
      this.formHeading,
      h("input", { name: "title", i18nPlaceholder: "Title", required: true, "data-testid": "issue-title" }),
      h("textarea", { name: "comment", i18nPlaceholder: "Description", rows: 2, "data-testid": "issue-comment" }),
      h("details", { class: "more-fields" }, h("summary", { i18n: "More fields" }),
        h("div", { class: "field-grid" },
          field("topicType", "Type"), field("priority", "Priority"), field("assignedTo", "Assigned to"),
          field("dueDate", "Due date", { type: "date" }), field("labels", "Labels", { i18nPlaceholder: "comma-separated" }), field("stage", "Stage"))),
      this.createButton);
    this.userInput = h("input", { "data-testid": "user-name", value: userName(), placeholder: DEFAULT_AUTHOR,
      onChange: () => { localStorage.setItem(USER_KEY, this.userInput.value.trim()); this.detail.render(); } });
    this.search = h("input", { type: "search", i18nPlaceholder: "Search issues", "data-testid": "issue-search", onInput: () => this.searchChanged() });
    this.filterSelects = FILTERS.map(([name]) => h("select", { "data-testid": `issue-filter-${name}`, onChange: (event) => this.filterChanged(name, event.target.value) }));
    this.count = h("small", { class: "meta", "data-testid": "issue-count" });
    this.list = h("ul", { class: "issue-list", "data-testid": "issue-list" });
    this.empty = h("p", { class: "hint", i18n: "No issues." });
    this.bcfReport = h("details", { class: "bcf-report", "data-testid": "bcf-report", hidden: true });
    this.listView = h("div", { class: "issue-list-view" },
      rightsHint("review", READ_ONLY_HINT, "issues-read-only"),
      h("label", { class: "user-name", "data-needs": "review" }, h("span", { i18n: "Your name" }), this.userInput),
      this.form,
      h("div", { class: "bcf-actions" },
        h("button", { type: "button", "data-testid": "bcf-export", i18n: "Export BCF", onClick: () => this.exportBcf() }),
        h("label", { class: "button", "data-needs": "review" }, h("span", { i18n: "Import BCF" }),
          h("input", { type: "file", accept: ".bcfzip,.bcf,application/zip", hidden: true, "data-testid": "bcf-import", onChange: (event) => this.importBcf(event.target) }))),
      this.bcfReport,
      h("div", { class: "issue-filters" }, this.search, this.filterSelects, this.count),
      this.list, this.empty, Object.values(this.datalists));
    this.detailView = h("div", { class: "issue-detail", "data-testid": "issue-detail", hidden: true });
    replace(this.root, this.listView, this.detailView);
    this.pickedChanged(null);
  }

  get modelId() {
    return this.app.model && this.app.model.id;
  }

  async load() {
    if (this.loadedFor !== this.modelId) { // a half-typed issue and a report belong to their model
      this.form.reset();
      this.bcfReport.hidden = true;
      this.showList();
    }
    this.loadedFor = this.modelId;
    this.issues = (await guarded(() => this.app.api.get(`/models/${this.modelId}/issues`), "Loading issues failed")) || [];
    await this.refreshMatching();
    if (this.detail.issueId) this.detail.issueChanged(this.issues.find((issue) => issue.id === this.detail.issueId));
  }

  // picking changes only the heading: what is typed stays; with nothing picked the issue is about the current view
  pickedChanged(picked) {
    setText(this.formHeading, picked ? t("New issue on {name}", { name: picked.name || picked.id }) : t("New issue on the current view (or pick an element first)"));
    this.createButton.disabled = false;
  }

  relabel() {
    this.pickedChanged(this.app.picked);
    for (const element of this.list.children) delete element.dataset.version; // redraw the items' texts
    this.renderList();
    this.detail.render();
  }

  // --- search and filters -----------------------------------------------------------------------------------

  apiQuery() {
    const params = new URLSearchParams();
    for (const [name] of API_FILTERS) if (this.filters[name]) params.set(name, this.filters[name]);
    if (this.query.trim()) params.set("q", this.query.trim());
    return params.toString();
  }

  searchChanged() {
    this.query = this.search.value;
    clearTimeout(this.searchTimer);
    this.list.setAttribute("aria-busy", "true");
    this.searchTimer = setTimeout(() => this.refreshMatching(), SEARCH_DELAY_MS);
  }

  filterChanged(name, value) {
    this.filters[name] = value;
    if (API_FILTERS.some(([api]) => api === name)) this.refreshMatching();
    else this.renderList();
  }

  // asks the API which issues match its filters (the newest request wins), then shows them
  async refreshMatching() {
    const query = this.apiQuery();
    const request = ++this.requests;
    if (!query) {
      this.matching = null;
    } else {
      this.list.setAttribute("aria-busy", "true");
      const rows = await guarded(() => this.app.api.get(`/models/${this.modelId}/issues?${query}`), "Filtering issues failed");
      if (request !== this.requests) return;
      this.matching = rows ? rows.map((issue) => issue.id) : [];
    }
    this.list.removeAttribute("aria-busy");
    this.renderList();
  }

  localMatch(issue) {
    return LOCAL_FILTERS.every(([name, , values]) => !this.filters[name] || values(issue).includes(this.filters[name]));
  }

  fillFilters() {
    FILTERS.forEach(([name, anyLabel, values, fixed], index) => {
      const select = this.filterSelects[index];
      const options = fixed || [...new Set(this.issues.flatMap(values).filter(Boolean))].sort();
      const wanted = [...options, t(anyLabel)].join("\n");
      if (select.dataset.options === wanted) return;
      select.dataset.options = wanted;
      replace(select, h("option", { value: "" }, t(anyLabel)),
        options.map((option) => h("option", { value: option, selected: this.filters[name] === option }, fixed ? t(option) : option)));
      select.hidden = !fixed && options.length === 0 && !this.filters[name];
    });
  }

  shownIssues() {
    const byId = new Map(this.issues.map((issue) => [issue.id, issue]));
    const candidates = this.matching ? this.matching.map((id) => byId.get(id)).filter(Boolean) : this.issues;
    return candidates.filter((issue) => this.localMatch(issue));
  }

  renderList() {
    this.fillFilters();
    for (const [field, list] of Object.entries(this.datalists)) {
      const options = fieldOptions(this.issues, field);
      if (list.dataset.options !== options.join("\n")) {
        list.dataset.options = options.join("\n");
        replace(list, options.map((value) => h("option", { value })));
      }
    }
    const shown = this.shownIssues();
    syncKeyed(this.list, shown, (issue) => issue.id, (issue) => this.item(issue), (element, issue) => this.updateItem(element, issue));
    this.empty.hidden = shown.length > 0;
    setText(this.count, t("{shown} of {total} issues", { shown: shown.length, total: this.issues.length }));
  }

  item(issue) {
    return h("li", { class: "issue", dataset: { issueId: issue.id, testid: "issue-item" } });
  }

  updateItem(element, issue) {
    if (element.dataset.version === issue.updatedAt) return;
    element.dataset.version = issue.updatedAt;
    const tag = (testid, text, extra = "") => text && h("span", { class: `tag ${extra}`, "data-testid": testid }, text);
    replace(element,
      issue.screenshot && h("img", { src: this.screenshotUrl(issue), alt: "", class: "thumb", onClick: () => this.showDetail(issue.id) }),
      h("div", { class: "issue-body" },
        h("strong", {}, issue.title), this.sourceBadge(issue),
        h("div", { class: "tags" },
          tag("issue-type", issue.topicType, "type"),
          tag("issue-priority", issue.priority, `priority ${issue.priority.toLowerCase()}`),
          tag("issue-assignee", issue.assignedTo && `→ ${issue.assignedTo}`, "assignee"),
          tag("issue-due", issue.dueDate && t("due {date}", { date: formatDate(issue.dueDate) }), overdue(issue) ? "due overdue" : "due"),
          tag("issue-stage", issue.stage, "stage"),
          (issue.labels || []).map((label) => tag("issue-label", label, "label"))),
        h("p", {}, issue.comment), h("small", {}, [this.subject(issue), issue.author].filter(Boolean).join(" · ")),
        h("div", { class: "issue-actions" },
          this.statusSelect(issue, "issue-status"),
          this.canFlyTo(issue) && h("button", { "data-testid": "fly-to", i18n: "Fly to", i18nTitle: "Apply the issue's viewpoint", onClick: () => this.flyTo(issue) }),
          h("button", { "data-testid": "issue-open", i18n: "Details", onClick: () => this.showDetail(issue.id) }),
          h("button", { class: "danger", i18n: "Delete", "data-testid": "issue-delete", "data-needs": "review", onClick: () => this.remove(issue) }))));
  }

  sourceBadge(issue) {
    const source = issueSource(issue);
    const ids = source === IDS_LABEL ? (issue.labels || []).filter((label) => label !== IDS_LABEL).join(", ") : "";
    return h("span", { class: `badge-inline ${source}`, "data-testid": "issue-source", title: ids ? t("Pinned from an IDS check of {ids}", { ids }) : null }, source);
  }

  // what the issue is about: its element, the number of elements its viewpoint selects, or nothing (a general issue)
  subject(issue) {
    if (issue.entityName || issue.entityId) return issue.entityName || issue.entityId;
    const count = issueElements(issue).length;
    return count ? t("{count} element(s)", { count }) : "";
  }

  canFlyTo(issue) {
    return Boolean(issue.viewpoints.length || issue.camera || issue.entityId);
  }

  // the status to change, or only to read where the user may not review
  statusSelect(issue, testid) {
    return [
      h("select", { "data-testid": testid, "data-needs": "review", onChange: (event) => this.update(issue, { status: event.target.value }, "Changing the status failed") },
        STATUSES.map((s) => h("option", { value: s, selected: s === issue.status }, t(s)))),
      h("span", { class: "tag status", "data-testid": `${testid}-text`, "data-when-lacking": "review", i18n: issue.status }),
    ];
  }

  screenshotUrl(issue) {
    return `/v1/models/${this.modelId}/${issue.screenshot}`;
  }

  // --- detail view --------------------------------------------------------------------------------------------

  showDetail(issueId) {
    const issue = this.issues.find((i) => i.id === issueId);
    if (!issue) return this.showList();
    this.detail.open(issue);
    this.detailView.hidden = false;
    this.listView.hidden = true;
    return issue;
  }

  showList() {
    this.detail.close();
    this.detailView.hidden = true;
    this.listView.hidden = false;
  }

  // --- actions --------------------------------------------------------------------------------------------

  // the issue's first viewpoint (or, for an issue without one, its camera, or its element framed) applied to the view
  flyTo(issue, viewpoint = issue.viewpoints[0]) {
    const view = this.app.view;
    if (viewpoint && view.applyViewpoint) {
      view.applyViewpoint(viewpoint);
      return;
    }
    if (issue.camera) view.flyTo(issue.camera);
    else if (issue.entityId && view.flyToObject && view.flyToObject(issue.entityId)) return;
    if (issue.entityId) view.select(issue.entityId, (meta) => this.app.setPicked(meta));
  }

  upsert(issue) {
    const index = this.issues.findIndex((i) => i.id === issue.id);
    if (index >= 0) this.issues[index] = issue;
    else this.issues.unshift(issue);
    if (this.detail.issueId === issue.id) this.detail.issueChanged(issue);
    if (this.apiQuery()) this.refreshMatching(); // the change may move it in or out of the filtered list
    else this.renderList();
  }

  // PATCH: the changed fields of an issue, who changes them; the answer replaces the issue in the list
  async update(issue, changes, failure) {
    const author = userName();
    const updated = await guarded(() => this.app.api.patch(`/models/${this.modelId}/issues/${issue.id}`, { ...changes, ...(author ? { modifiedAuthor: author } : {}) }), failure);
    if (updated) this.upsert(updated);
    else this.renderList();
    return updated;
  }

  // the issue as the server has it now (after a comment changed its modifiedAt)
  async reloadIssue(issueId) {
    const rows = await guarded(() => this.app.api.get(`/models/${this.modelId}/issues?q=${encodeURIComponent(issueId)}`), "Loading the issue failed");
    const issue = rows && rows.find((row) => row.id === issueId);
    if (issue) this.upsert(issue);
  }

  async create(form) {
    const picked = this.app.picked;
    const fields = form.elements;
    const payload = {
      ...(picked ? { entityId: picked.id, entityName: picked.name || "", entityType: picked.type } : {}), title: fields.title.value, comment: fields.comment.value,
    };
    if (userName()) payload.author = userName();
    for (const name of ["topicType", "priority", "assignedTo", "stage"]) if (fields[name].value.trim()) payload[name] = fields[name].value.trim();
    if (fields.dueDate.value) payload.dueDate = `${fields.dueDate.value}T00:00:00Z`;
    if (labelsFrom(fields.labels.value).length) payload.labels = labelsFrom(fields.labels.value);
    const view = this.app.view;
    if (view.viewpoint) payload.viewpoints = [view.viewpoint()]; // the issue's camera is the viewpoint's
    else payload.camera = view.camera();
    const data = new FormData();
    data.append("issue", JSON.stringify(payload));
    if (view.snapshotBlob) data.append("screenshot", await view.snapshotBlob(), "screenshot.png"); // = the viewpoint's snapshot
    const issue = await guarded(() => this.app.api.upload(`/models/${this.modelId}/issues`, data), "Pinning the issue failed");
    if (!issue) return;
    toast(t("Issue {id} pinned", { id: issue.id }));
    form.reset();
    this.upsert(issue);
  }

  async exportBcf() {
    const blob = await guarded(() => this.app.api.blob(`/models/${this.modelId}/issues.bcfzip`), "Exporting BCF failed");
    if (!blob) return;
    const link = h("a", { href: URL.createObjectURL(blob), download: `${this.modelId}-issues.bcfzip` });
    link.click();
    setTimeout(() => URL.revokeObjectURL(link.href), 1000);
  }

  async importBcf(input) {
    const file = input.files[0];
    input.value = "";
    if (!file) return;
    const data = new FormData();
    data.append("file", file, file.name);
    const report = await guarded(() => this.app.api.upload(`/models/${this.modelId}/issues/bcf`, data), "Importing BCF failed");
    if (!report) return;
    const counts = { imported: report.imported.length, updated: report.updated.length, skipped: report.skipped.length };
    toast(t("Imported {imported} issue(s), updated {updated}, skipped {skipped}", counts));
    for (const warning of report.warnings || []) toast(warning, "error");
    this.showBcfReport(file.name, report, counts);
    await this.load();
  }

  // what the import did, topic by topic: imported (with notes), updated (with the changes), skipped (with the reason)
  showBcfReport(fileName, report, counts) {
    const entry = (kind, topic, text) => h("li", { class: kind, dataset: { testid: `bcf-${kind}`, issueId: topic.issueId || "" } },
      h("strong", {}, topic.title || topic.topic), text && `: ${text}`);
    replace(this.bcfReport,
      h("summary", {}, t("BCF import of {file}: {imported} imported, {updated} updated, {skipped} skipped", { file: fileName, ...counts })),
      h("ul", {},
        report.imported.map((topic) => entry("imported", topic, topic.notes.join("; "))),
        report.updated.map((topic) => entry("updated", topic, [...topic.changes, ...topic.notes].join("; "))),
        (report.warnings || []).map((warning) => h("li", { class: "warning", dataset: { testid: "bcf-warning" } }, warning)),
        report.skipped.map((topic) => entry("skipped", topic, topic.reason))),
      h("button", { type: "button", class: "link", i18n: "Close", onClick: () => { this.bcfReport.hidden = true; } }));
    this.bcfReport.hidden = false;
    this.bcfReport.open = counts.updated + counts.skipped > 0 || (report.warnings || []).length > 0 || report.imported.some((topic) => topic.notes.length);
  }

  async remove(issue) {
    if (!window.confirm(t("Delete issue \"{title}\"?", { title: issue.title }))) return;
    if ((await guarded(() => this.app.api.delete(`/models/${this.modelId}/issues/${issue.id}`), "Deleting failed")) === undefined) return;
    this.issues = this.issues.filter((i) => i.id !== issue.id);
    if (this.detail.issueId === issue.id) this.showList();
    if (this.matching) this.matching = this.matching.filter((id) => id !== issue.id);
    this.renderList();
  }
}
