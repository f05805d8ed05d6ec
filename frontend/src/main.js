// The web client: model list, 3D view, properties with overrides, issues, script editing, diffs and the chat.
import { Api } from "./api.js";
import { ChatPanel } from "./chat.js";
import { DiffPanel } from "./diff.js";
import { IssuesPanel } from "./issues.js";
import { ModelList } from "./models.js";
import { PropertiesPanel } from "./properties.js";
import { ScriptPanel } from "./script.js";
import { errorText, guarded, toast } from "./ui.js";
import { DrawingView } from "./view2d.js";
import { ModelView } from "./viewer3d.js";

function askToken() {
  const dialog = document.getElementById("token-dialog");
  const input = document.getElementById("token-input");
  return new Promise((resolve) => {
    dialog.addEventListener("close", () => resolve(input.value.trim()), { once: true });
    if (!dialog.open) dialog.showModal();
  });
}

class App {
  constructor() {
    this.api = new Api(askToken);
    this.model = null;
    this.picked = null;
    this.stageState = document.getElementById("stage-state");
    this.badge = document.getElementById("staged-badge");
    this.view3d = new ModelView("view3d", "navcube", (meta) => this.setPicked(meta));
    this.drawing = new DrawingView(this.api, "stage", (meta) => this.setPicked(meta));
    this.models = new ModelList(this);
    this.properties = new PropertiesPanel(this);
    this.issues = new IssuesPanel(this);
    this.script = new ScriptPanel(this);
    this.diff = new DiffPanel(this);
    this.chat = new ChatPanel(this);
    this.badge.addEventListener("click", () => this.reloadWhenReady());
    for (const tab of document.querySelectorAll("[data-tab]")) tab.addEventListener("click", () => this.showTab(tab.dataset.tab));
    this.models.refresh();
  }

  // the view of the open model: the 2D drawing of a DXF model, else the 3D view
  get view() {
    return this.model && this.model.format === "dxf" ? this.drawing : this.view3d;
  }

  showTab(name) {
    for (const tab of document.querySelectorAll("[data-tab]")) tab.classList.toggle("active", tab.dataset.tab === name);
    for (const section of document.querySelectorAll(".tab")) section.hidden = section.id !== `tab-${name}`;
  }

  setState(text, kind = "") {
    this.stageState.textContent = text;
    this.stageState.className = `stage-state ${kind}`;
    this.stageState.hidden = !text;
  }

  setOffline(offline) {
    const banner = document.getElementById("connection");
    banner.hidden = !offline;
    banner.textContent = offline ? "Connection lost: retrying…" : "";
  }

  setStreamState(state) {
    const banner = document.getElementById("connection");
    banner.hidden = state === "live";
    banner.textContent = state === "live" ? "" : "Chat connection lost: reconnecting…";
  }

  modelsChanged(models) {
    if (!this.model) return;
    const current = models.find((m) => m.id === this.model.id);
    if (!current) {
      this.closeModel();
    } else if (this.waitingForProduct && current.status !== "converting") {
      this.waitingForProduct = false;
      if (current.status === "ready") this.loadGeometry(current);
      else this.setState(`Conversion failed: ${current.error}`, "error");
    }
  }

  async openModel(modelId) {
    const model = this.models.models.find((m) => m.id === modelId);
    this.model = model;
    this.setPicked(null);
    document.getElementById("model-title").textContent = model.name;
    this.models.render();
    await this.loadGeometry(model);
    await this.properties.loadOverrides();
    await Promise.all([this.issues.load(), this.script.load(), this.diff.load(), this.chat.open(model)]);
  }

  async openProject(project) {
    this.closeModel();
    this.models.render();
    document.getElementById("model-title").textContent = project.title;
    this.setState("The agent creates this project's drawing: ask it in the chat");
    this.showTab("chat");
    await this.chat.openProject(project.projectId);
  }

  closeModel() {
    this.model = null;
    this.view3d.unload();
    this.drawing.unload();
    document.getElementById("model-title").textContent = "";
    this.setState("Select a model");
  }

  async loadGeometry(model) {
    this.setState("Loading…", "loading");
    this.badge.hidden = true;
    const drawing = model.format === "dxf";
    this.drawing.show(drawing);
    for (const id of ["view3d", "navcube"]) document.getElementById(id).hidden = drawing;
    try {
      await this.view.load(model.id, `${model.size}-${Date.now()}`);
      this.setState("");
    } catch (error) {
      this.setState(`The model could not be loaded: ${errorText(error)}`, "error");
    }
  }

  setPicked(meta) {
    this.picked = meta;
    this.properties.show(meta);
    if (this.issues) this.issues.render();
  }

  showStagedBadge(data) {
    if (this.model && data.modelId === this.model.id) {
      this.badge.hidden = false;
      this.script.load();
    }
  }

  productChanged() {
    // a run, save, rollback or discard queued a reconversion: reload the geometry once it is ready
    this.waitingForProduct = true;
    this.badge.hidden = false;
    this.setState("Converting the new product…", "loading");
    this.models.refresh();
  }

  reloadWhenReady() {
    this.productChanged();
  }
}

window.viewerApp = new App();
window.addEventListener("unhandledrejection", (event) => toast(errorText(event.reason), "error"));
export { guarded };
