// Review issues: pin one to the picked element with a screenshot of the canvas and the camera; list, filter,
// change status, fly back to an issue's camera; exchange them with other tools as BCF 3.0.
import { guarded, h, replace, toast } from "./ui.js";

const STATUSES = ["open", "checking", "resolved"];

export class IssuesPanel {
  constructor(app) {
    this.app = app;
    this.root = document.getElementById("tab-issues");
    this.issues = [];
    this.filter = "";
  }

  async load() {
    this.issues = (await guarded(() => this.app.api.get(`/models/${this.app.model.id}/issues`), "Loading issues failed")) || [];
    this.render();
  }

  render() {
    const picked = this.app.picked;
    const shown = this.issues.filter((issue) => !this.filter || issue.status === this.filter);
    replace(this.root,
      h("form", { class: "new-issue", onSubmit: (event) => { event.preventDefault(); this.create(event.target); } },
        h("h4", {}, picked ? `New issue on ${picked.name || picked.id}` : "New issue (pick an element first)"),
        h("input", { name: "title", placeholder: "Title", required: true, "data-testid": "issue-title" }),
        h("textarea", { name: "comment", placeholder: "Comment", rows: 2, "data-testid": "issue-comment" }),
        h("button", { disabled: !picked, "data-testid": "create-issue" }, "Pin issue with screenshot")),
      h("div", { class: "bcf-actions" },
        h("button", { type: "button", "data-testid": "bcf-export", onClick: () => this.exportBcf() }, "Export BCF"),
        h("label", { class: "button" }, "Import BCF",
          h("input", { type: "file", accept: ".bcfzip,.bcf,application/zip", hidden: true, "data-testid": "bcf-import",
            onChange: (event) => this.importBcf(event.target) }))),
      h("label", { class: "filter" }, "Show ",
        h("select", { "data-testid": "issue-filter", onChange: (event) => { this.filter = event.target.value; this.render(); } },
          h("option", { value: "" }, "all"), STATUSES.map((s) => h("option", { value: s, selected: s === this.filter }, s)))),
      shown.length ? h("ul", { class: "issue-list", "data-testid": "issue-list" }, shown.map((issue) => this.item(issue)))
        : h("p", { class: "hint" }, "No issues."),
    );
  }

  item(issue) {
    return h("li", { class: "issue", dataset: { issueId: issue.id, testid: "issue-item" } },
      issue.screenshot && h("img", { src: `/v1/models/${this.app.model.id}/${issue.screenshot}`, alt: "", class: "thumb" }),
      h("div", { class: "issue-body" },
        h("strong", {}, issue.title), h("span", { class: `badge-inline ${issue.provenance.source}` }, issue.provenance.source),
        h("p", {}, issue.comment), h("small", {}, `${issue.entityName || issue.entityId} · ${issue.author}`),
        h("div", { class: "issue-actions" },
          h("select", { "data-testid": "issue-status", onChange: (event) => this.setStatus(issue, event.target.value) },
            STATUSES.map((s) => h("option", { value: s, selected: s === issue.status }, s))),
          issue.camera && h("button", { "data-testid": "fly-to", onClick: () => this.flyTo(issue) }, "Fly to"),
          h("button", { class: "danger", onClick: () => this.remove(issue) }, "Delete"))));
  }

  flyTo(issue) {
    this.app.view.flyTo(issue.camera);
    if (issue.entityId) this.app.view.select(issue.entityId, (meta) => this.app.setPicked(meta));
  }

  async create(form) {
    const picked = this.app.picked;
    const payload = {
      entityId: picked.id, entityName: picked.name || "", entityType: picked.type, title: form.elements.title.value,
      comment: form.elements.comment.value, camera: this.app.view.camera(),
    };
    const data = new FormData();
    data.append("issue", JSON.stringify(payload));
    data.append("screenshot", await this.app.view.snapshotBlob(), "screenshot.png");
    const issue = await guarded(() => this.app.api.upload(`/models/${this.app.model.id}/issues`, data), "Pinning the issue failed");
    if (!issue) return;
    toast(`Issue ${issue.id} pinned`);
    form.reset();
    this.issues.unshift(issue);
    this.render();
  }

  async exportBcf() {
    const blob = await guarded(() => this.app.api.blob(`/models/${this.app.model.id}/issues.bcfzip`), "Exporting BCF failed");
    if (!blob) return;
    const link = h("a", { href: URL.createObjectURL(blob), download: `${this.app.model.id}-issues.bcfzip` });
    link.click();
    setTimeout(() => URL.revokeObjectURL(link.href), 1000);
  }

  async importBcf(input) {
    const file = input.files[0];
    input.value = "";
    if (!file) return;
    const data = new FormData();
    data.append("file", file, file.name);
    const report = await guarded(() => this.app.api.upload(`/models/${this.app.model.id}/issues/bcf`, data), "Importing BCF failed");
    if (!report) return;
    const skipped = report.skipped.map((s) => `${s.title || s.topic}: ${s.reason}`);
    toast([`Imported ${report.imported.length} issue(s), skipped ${report.skipped.length}`, ...skipped].join("\n"));
    await this.load();
  }

  async setStatus(issue, status) {
    const updated = await guarded(() => this.app.api.patch(`/models/${this.app.model.id}/issues/${issue.id}`, { status }), "Changing the status failed");
    if (updated) Object.assign(issue, updated);
    this.render();
  }

  async remove(issue) {
    if (!window.confirm(`Delete issue "${issue.title}"?`)) return;
    if ((await guarded(() => this.app.api.delete(`/models/${this.app.model.id}/issues/${issue.id}`), "Deleting failed")) === undefined) return;
    this.issues = this.issues.filter((i) => i.id !== issue.id);
    this.render();
  }
}
