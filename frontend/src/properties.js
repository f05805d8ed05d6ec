// The picked element: its class, name, property sets, and the whitelisted overrides, editable. The property table
// shows the overridden values, marked, with the model's own value beside them. Editing the overrides needs the edit
// capability (account.js hides the form without it; the hint says why).
import { rightsHint } from "./account.js";
import { t } from "./i18n.js";
import { guarded, h, replace, toast } from "./ui.js";

export const OVERRIDE_FIELDS = ["Name", "Description", "Classification", "FireRating", "Comments"];

function ifcValue(meta, field) {
  if (field === "Name") return meta.name || "";
  for (const set of meta.propertySets || []) {
    const property = (set.properties || []).find((p) => p.name === field);
    if (property && property.value !== undefined && property.value !== null) return String(property.value);
  }
  return "";
}

// an overridden value in the property table: the override, marked, and the model's own value struck through
function overriddenCell(value, original) {
  const own = String(original ?? "");
  return h("td", { class: "overridden-value", "data-testid": "overridden-value", i18nTitle: "Overridden: the model itself has the struck-through value" },
    h("span", { class: "overridden", i18n: "override" }), " ", value, " ", h("del", { class: "original", "data-testid": "original-value" }, own || "—"));
}

export class PropertiesPanel {
  constructor(app) {
    this.app = app;
    this.root = document.getElementById("tab-properties");
    this.overrides = {};
    this.show(null);
  }

  async loadOverrides() {
    this.overrides = (await guarded(() => this.app.api.get(`/models/${this.app.model.id}/overrides`), "Loading overrides failed")) || {};
    this.show(this.meta); // an element picked while they loaded
  }

  show(meta) {
    this.meta = meta;
    if (!meta) {
      replace(this.root, h("p", { class: "hint", i18n: "Pick an element in the 3D view." }));
      return;
    }
    const overrides = this.overrides[meta.id] || {};
    const overridden = OVERRIDE_FIELDS.filter((field) => overrides[field] !== undefined);
    const cell = (name, value) => (overrides[name] !== undefined ? overriddenCell(overrides[name], value) : h("td", {}, String(value ?? "")));
    const fields = OVERRIDE_FIELDS.map((field) => h("label", { class: "field" }, field,
      h("input", { name: field, value: overrides[field] ?? "", placeholder: ifcValue(meta, field), dataset: { testid: `override-${field}` } }),
      overrides[field] !== undefined && h("span", { class: "overridden", i18n: "override" })));
    replace(this.root,
      h("h3", { "data-testid": "picked-name" }, meta.name || meta.id),
      h("p", { class: "meta" }, `${meta.type} · ${meta.id}`),
      rightsHint("edit", "Your role here may only read: changing property overrides needs the editor role in this project.", "overrides-read-only"),
      h("form", { class: "overrides", "data-needs": "edit", "data-testid": "overrides-form", onSubmit: (event) => { event.preventDefault(); this.save(event.target); } },
        h("h4", { i18n: "Overrides" }), fields, h("button", { "data-testid": "save-overrides", i18n: "Save overrides" })),
      overridden.length > 0 && h("details", { class: "pset", open: true, "data-testid": "overridden-properties" }, h("summary", { i18n: "Overridden properties" }),
        h("table", {}, overridden.map((field) => h("tr", {}, h("th", {}, field), cell(field, ifcValue(meta, field)))))),
      (meta.propertySets || []).map((set) => h("details", { class: "pset" }, h("summary", {}, set.name),
        h("table", {}, (set.properties || []).map((p) => h("tr", {}, h("th", {}, p.name), cell(p.name, p.value))))))
    );
  }

  async save(form) {
    const meta = this.meta;
    const current = this.overrides[meta.id] || {};
    const fields = {};
    for (const field of OVERRIDE_FIELDS) {
      const value = form.elements[field].value;
      if (value !== (current[field] ?? "")) fields[field] = value;
    }
    if (!Object.keys(fields).length) return toast(t("Nothing changed"));
    const effective = await guarded(() => this.app.api.put(`/models/${this.app.model.id}/entities/${encodeURIComponent(meta.id)}/properties`,
      { entityName: meta.name || "", fields }), "Saving overrides failed");
    if (!effective) return;
    this.overrides[meta.id] = effective;
    toast(t("Overrides saved"));
    this.show(meta);
  }
}
