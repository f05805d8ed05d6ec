// The 3D view's toolbar: fit, show all, X-ray, section planes, measurement, the plan of one storey (with its
// storey map from StoreyViewsPlugin, clickable to pick), and the version-diff legend.
import { t } from "./i18n.js";
import { h, replace } from "./ui.js";

export class ViewToolbar {
  constructor(view, root) {
    this.view = view;
    this.root = root;
    const button = (label, testid, action, extra = {}) => h("button", { type: "button", i18n: label, "data-testid": testid, onClick: action, ...extra });
    this.sectionButton = button("Section", "tool-section", () => view.setMode("section"), { i18nTitle: "Click a surface to place a section plane" });
    this.measureButton = button("Measure", "tool-measure", () => view.setMode("measure"), { i18nTitle: "Click two points to measure" });
    this.storeySelect = h("select", { "data-testid": "plan-storey", onChange: () => this.plan(this.storeySelect.value) });
    this.exitPlanButton = button("Exit plan", "plan-exit", () => view.exitPlan(), { hidden: true });
    this.storeyMap = h("img", { class: "storey-map", alt: "", "data-testid": "storey-map", hidden: true,
      onClick: (event) => view.pickOnPlan([event.offsetX * (this.storeyMap.naturalWidth / this.storeyMap.width), event.offsetY * (this.storeyMap.naturalHeight / this.storeyMap.height)]) });
    this.legend = h("div", { class: "diff-legend", "data-testid": "diff-legend", hidden: true },
      ["added", "changed", "removed"].map((kind) => h("span", { class: `swatch ${kind}` }, h("i"), h("span", { i18n: kind }))),
      h("span", { class: "swatch ghost" }, h("i"), h("span", { i18n: "unchanged (ghosted)" })));
    replace(root,
      h("div", { class: "tools" },
        button("Fit all", "fit-all", () => view.fitAll(), { title: "Shift+F" }),
        button("Fit selection", "fit-selection", () => view.fit(view.selectedIds()), { title: "F" }),
        button("Show all", "show-all", () => view.showAll(), { title: "U" }),
        button("X-ray", "xray", () => view.toggleXray(view.selectedIds().length ? view.selectedIds() : view.viewer.scene.objectIds), { title: "T" }),
        h("span", { class: "sep" }),
        this.sectionButton,
        button("Flip sections", "section-flip", () => view.flipSections()),
        button("Clear sections", "section-clear", () => view.clearSections()),
        h("span", { class: "sep" }),
        this.measureButton,
        button("Clear measurements", "measure-clear", () => view.clearMeasurements()),
        h("span", { class: "sep" }),
        this.storeySelect, this.exitPlanButton,
        h("span", { class: "keys", i18n: "Keys: H hide · I isolate · T X-ray · U show all · F fit selection · Shift+F fit all · Esc cancel" })),
      this.storeyMap, this.legend);
    view.on((event) => this.viewEvent(event));
  }

  viewEvent(event) {
    if (event.type === "mode") {
      this.sectionButton.classList.toggle("active", event.mode === "section");
      this.measureButton.classList.toggle("active", event.mode === "measure");
    } else if (event.type === "loaded") {
      this.fillStoreys();
    } else if (event.type === "plan") {
      this.exitPlanButton.hidden = !event.plan;
      this.storeyMap.hidden = !event.plan;
      if (event.plan) this.storeyMap.src = event.plan.map.imageData;
      else this.storeySelect.value = "";
    } else if (event.type === "diff") {
      this.legend.hidden = !event.diff;
    }
  }

  fillStoreys() {
    replace(this.storeySelect, h("option", { value: "", i18n: "Plan of a storey" }),
      this.view.storeys().map((storey) => h("option", { value: storey.id }, storey.name)));
  }

  plan(storeyId) {
    if (storeyId) this.view.enterPlan(storeyId);
    else this.view.exitPlan();
  }

  relabel() {
    if (this.view.model) this.fillStoreys();
  }
}

export function versionLabel(onScreen) {
  if (!onScreen) return "";
  if (onScreen.stale) return t("an older product: reload to see the newest");
  if (onScreen.version) return onScreen.version;
  return onScreen.scripted ? t("current product (unsaved preview)") : t("current product");
}
