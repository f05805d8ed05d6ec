// The semantic diff of two versions (or a version and the current product), the changed elements coloured in 3D.
import { guarded, h, replace } from "./ui.js";

export class DiffPanel {
  constructor(app) {
    this.app = app;
    this.root = document.getElementById("tab-diff");
  }

  async load() {
    const versions = await guarded(() => this.app.api.get(`/models/${this.app.model.id}/edit/versions`), "Loading versions failed");
    if (!versions) return;
    const names = versions.versions.map((v) => v.version);
    if (!names.length) {
      replace(this.root, h("p", { class: "hint" }, "No saved versions yet."));
      return;
    }
    const targets = [...names, "current"];
    replace(this.root,
      h("form", { class: "diff-form", onSubmit: (event) => { event.preventDefault(); this.compare(event.target); } },
        h("select", { name: "base", "data-testid": "diff-base" }, names.map((n) => h("option", { value: n }, n))),
        " → ",
        h("select", { name: "target", "data-testid": "diff-target" }, targets.map((n, i) => h("option", { value: n, selected: i === targets.length - 1 }, n))),
        h("button", { "data-testid": "compare" }, "Compare"),
        h("button", { type: "button", onClick: () => this.app.view.clearDiff() }, "Clear colours")),
      h("div", { id: "diff-result", "data-testid": "diff-result" }));
  }

  async compare(form) {
    const diff = await guarded(() => this.app.api.post(`/models/${this.app.model.id}/edit/diff`, { base: form.elements.base.value, target: form.elements.target.value }), "Diff failed");
    if (!diff) return;
    this.app.view.showDiff(diff);
    const name = (id) => (this.app.view.metaObject(id) || {}).name || id;
    replace(document.getElementById("diff-result"),
      h("p", { "data-testid": "diff-counts" }, `${diff.added.length} added · ${diff.removed.length} removed · ${diff.changed.length} changed`),
      h("ul", { class: "diff-list" },
        diff.added.map((id) => h("li", { class: "added" }, `+ ${name(id)}`)),
        diff.removed.map((id) => h("li", { class: "removed" }, `- ${id}`)),
        diff.changed.map((item) => h("li", { class: "changed" }, h("strong", {}, name(item.guid)),
          h("ul", {}, item.changes.map((c) => h("li", {}, `${c.field}: ${JSON.stringify(c.old)} → ${JSON.stringify(c.new)}`)))))));
  }
}
