// The web client: model list, 3D view with its navigator and tools, properties with overrides, issues, and the
// panels loaded on first use (script editor, diffs, IDS checks, chat, coordination). A project opens federated
// (#project=p_...): its ready models in one view, each placed by the server's model -> project matrix; the model of
// the last picked element is then the open model (its properties, overrides, issues, rights).
import { Account } from "./account.js";
import { Api, ApiError } from "./api.js";
import { LANGUAGES, language, onLanguageChange, setLanguage, t, translateStatic } from "./i18n.js";
import { IssuesPanel } from "./issues.js";
import { ModelList } from "./models.js";
import { Navigator } from "./navigator.js";
import { PropertiesPanel } from "./properties.js";
import { ViewToolbar, versionLabel } from "./toolbar.js";
import { errorText, guarded, h, toast } from "./ui.js";
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

// panels whose code (and libraries: CodeMirror, Markdown) is fetched the first time they are needed
const LAZY_PANELS = {
  script: () => import("./script.js").then((module) => module.ScriptPanel),
  diff: () => import("./diff.js").then((module) => module.DiffPanel),
  checks: () => import("./checks.js").then((module) => module.ChecksPanel),
  chat: () => import("./chat.js").then((module) => module.ChatPanel),
  coordination: () => import("./coordination.js").then((module) => module.CoordinationPanel),
};
const FOLLOWING_PANELS = ["script", "diff", "checks", "coordination"]; // loaded panels that follow the open model

class App {
  // downloads: the model files the page's entry started downloading (boot.js), URL -> Promise of the Response
  constructor(downloads = new Map()) {
    this.api = new Api(askToken, () => this.account.signIn());
    this.account = new Account(this);
    this.model = null;
    this.federation = null; // {projectId, title, models: [{modelId, discipline, version, status, matrix, name}]}
    this.picked = null;
    this.onScreen = null; // {modelId, version, scripted, stale}: what the 3D view shows
    this.panels = {}; // name -> Promise of the panel
    this.loaded = {}; // name -> the panel, once loaded
    this.stageState = document.getElementById("stage-state");
    this.badge = document.getElementById("staged-badge");
    this.view3d = new ModelView("view3d", "navcube", (meta) => this.setPicked(meta), downloads);
    const early = this.loadFromHash();
    this.view3d.initTools();
    this.navigator = new Navigator(this.view3d, document.getElementById("navigator"));
    this.toolbar = new ViewToolbar(this.view3d, document.getElementById("view-toolbar"));
    this.drawing = new DrawingView(this.api, "stage", (meta) => this.setPicked(meta));
    this.models = new ModelList(this);
    this.properties = new PropertiesPanel(this);
    this.issues = new IssuesPanel(this);
    this.badge.addEventListener("click", () => this.reloadWhenReady());
    for (const tab of document.querySelectorAll("[data-tab]")) tab.addEventListener("click", () => this.showTab(tab.dataset.tab));
    this.languageSwitch();
    translateStatic();
    onLanguageChange(() => this.relabel());
    this.account.start();
    this.openFromHash(early);
    window.addEventListener("hashchange", () => this.followHash());
    document.body.dataset.app = "ready"; // every control has its handler from here on
  }

  languageSwitch() {
    const select = document.getElementById("language");
    select.replaceChildren(...Object.entries(LANGUAGES).map(([code, name]) => h("option", { value: code, selected: code === language() }, name)));
    select.addEventListener("change", () => setLanguage(select.value));
  }

  relabel() {
    this.navigator.relabel();
    this.properties.show(this.picked);
    this.issues.relabel();
    this.showOnScreen();
    for (const panel of Object.values(this.panels)) panel.then((p) => p.relabel && p.relabel());
  }

  // a lazily loaded panel, created once
  panel(name) {
    if (!this.panels[name]) this.panels[name] = LAZY_PANELS[name]().then((Panel) => (this.loaded[name] = new Panel(this)));
    return this.panels[name];
  }

  // the open model's id in the address (#model=m_...), so a reload or a link opens it again. Its geometry starts
  // loading at once, beside the model list (most models are 3D; a drawing or a model not ready drops it).
  hashModelId() {
    const match = /model=(m_[0-9a-f]{16})/.exec(window.location.hash);
    return match ? match[1] : null;
  }

  loadFromHash() {
    const id = this.hashModelId();
    return id ? this.view3d.load(id).catch((error) => error) : null;
  }

  async openFromHash(early) {
    await this.models.refresh();
    if (this.openProjectFromHash()) return;
    if (!this.hashModelId()) return;
    if (!(await this.openHashModel(early))) this.view3d.unload();
  }

  hashProjectId() {
    const match = /project=(p_[0-9a-f]+)/.exec(window.location.hash);
    return match ? match[1] : null;
  }

  // #project=p_... (a project's link, a share link of a whole project) opens the project's models federated; a
  // project of one ready model, or one the server places none of (no federation route), opens its first ready
  // model in the list instead (the list holds only what a share link shows)
  openProjectFromHash() {
    const projectId = this.hashProjectId();
    if (!projectId) return false;
    this.openFederation(projectId, { atLeast: 2 }).then((opened) => {
      const first = this.models.models.find((m) => m.status === "ready");
      if (!opened && first) this.openModel(first.id);
    });
    return true;
  }

  // another model's id put in the address of the open page (edited by hand, a link followed) opens that model;
  // another project's id opens that project federated
  async followHash() {
    const projectId = this.hashProjectId();
    if (projectId && !this.hashModelId()) {
      if (!this.federation || this.federation.projectId !== projectId) await this.openFederation(projectId);
      return;
    }
    const id = this.hashModelId();
    if (!id || (this.model && this.model.id === id)) return;
    if (!this.models.models.some((m) => m.id === id)) await this.models.refresh();
    if (!(await this.openHashModel())) toast(t("No ready model {id}", { id }), "error");
  }

  // opens the model named in the address when it is ready or converting (a reload or a link while a save's new
  // product or a revision converts: its geometry follows once ready); false when it is unknown or failed
  async openHashModel(early = null) {
    const model = this.models.models.find((m) => m.id === this.hashModelId());
    if (!model || !["ready", "converting"].includes(model.status)) return false;
    await this.openModel(model.id, model.format === "dxf" ? null : early); // unused for a converting model (openModel drops it)
    return true;
  }

  // the view of the open model: the 2D drawing of a DXF model, else the 3D view
  get view() {
    return this.model && this.model.format === "dxf" ? this.drawing : this.view3d;
  }

  async showTab(name) {
    for (const tab of document.querySelectorAll("[data-tab]")) tab.classList.toggle("active", tab.dataset.tab === name);
    // the chat (and its event stream) starts when its tab is first shown, then follows the open model; its panel
    // shows once its session is there, so a message typed at once has somewhere to go
    if (name === "chat" && this.model && !this.panels.chat) await (await this.panel("chat")).open(this.model);
    if (!this.tabShown(name)) return; // another tab was chosen meanwhile
    for (const section of document.querySelectorAll(".tab")) section.hidden = section.id !== `tab-${name}`;
    // the coordination tab also shows with no model open (a project's link before its models are ready)
    if (name in LAZY_PANELS && name !== "chat" && (this.model || name === "coordination") && !this.panels[name]) await (await this.panel(name)).load();
  }

  tabShown(name) {
    return document.querySelector(`[data-tab=${name}]`).classList.contains("active");
  }

  setState(text, kind = "") {
    this.stageState.textContent = text;
    this.stageState.className = `stage-state ${kind}`;
    this.stageState.hidden = !text;
  }

  setOffline(offline) {
    const banner = document.getElementById("connection");
    banner.hidden = !offline;
    banner.textContent = offline ? t("Connection lost: retrying…") : "";
  }

  setStreamState(state) {
    const banner = document.getElementById("connection");
    banner.hidden = state === "live";
    banner.textContent = state === "live" ? "" : t("Chat connection lost: reconnecting…");
    banner.dataset.state = state;
  }

  modelsChanged(models) {
    if (!this.model) return;
    const current = models.find((m) => m.id === this.model.id);
    if (!current) {
      if (!this.federation) this.closeModel(); // a federated model may be missing from a share link's list
    } else if (this.waitingForProduct && current.status !== "converting") {
      this.waitingForProduct = false;
      if (current.status === "ready" && this.federation) this.openFederation(this.federation.projectId); // all of it again
      else if (current.status === "ready") this.loadGeometry(current);
      else this.setState(t("Conversion failed: {error}", { error: current.error }), "error");
    }
  }

  async openModel(modelId, loading = null) {
    const model = this.models.models.find((m) => m.id === modelId);
    this.federation = null;
    this.waitingForProduct = false; // for the model open until now
    this.model = model;
    window.location.hash = `model=${model.id}`;
    await this.account.modelOpened(model.id); // before the panels draw: their controls follow what this user may do
    this.setPicked(null);
    document.getElementById("model-title").textContent = model.name;
    this.models.render();
    if (model.status === "converting") {
      this.view3d.dropEarlyDownloads(); // what the page's entry started downloading is the product being replaced
      this.view3d.unload();
      this.onScreen = null;
      this.showOnScreen();
      this.awaitProduct(t("Converting the model…"));
    } else await this.loadGeometry(model, loading);
    await this.modelPanels(model);
  }

  // the panels of the open model: overrides, issues, the chat, and the panels that follow it: those loaded, and the
  // one whose tab was chosen before any model was open (its tab shows, and nothing had loaded it)
  async modelPanels(model) {
    await this.properties.loadOverrides();
    const loads = [this.issues.load()];
    if (this.panels.chat || this.tabShown("chat")) loads.push(this.panel("chat").then((chat) => chat.open(model)));
    for (const name of FOLLOWING_PANELS) if (this.panels[name] || this.tabShown(name)) loads.push(this.panel(name).then((panel) => panel.load()));
    await Promise.all(loads);
  }

  // A project's ready models in one 3D view (GET projects/{pid}/federation: each model's matrix to the project
  // frame). The first ready model is the open one until an element of another is picked. False when the server
  // places fewer than `atLeast` ready models (no route, no right to view), with nothing changed.
  async openFederation(projectId, { atLeast = 1 } = {}) {
    let federation;
    try {
      federation = await this.api.get(`/projects/${projectId}/federation`);
    } catch (error) {
      if (!(error instanceof ApiError && error.status === 404)) toast(t("The project could not be opened: {error}", { error: errorText(error) }), "error");
      return false;
    }
    const ready = federation.models.filter((m) => m.status === "ready");
    if (!ready.length || ready.length < atLeast) return false;
    if (!ready.every((m) => this.models.models.some((known) => known.id === m.modelId))) await this.models.refresh();
    const listed = (id) => this.models.models.find((m) => m.id === id);
    const models = federation.models.map((m) => ({ ...m, name: (listed(m.modelId) || {}).name || m.modelId }));
    const project = await this.api.get(`/chat/projects/${projectId}`).catch(() => null);
    this.closeModel();
    this.federation = { projectId, title: (project && project.title) || projectId, models };
    window.location.hash = `project=${projectId}`;
    const first = models.find((m) => m.status === "ready");
    this.model = listed(first.modelId) || { id: first.modelId, name: first.name, status: "ready", format: "ifc" };
    await this.account.modelOpened(this.model.id);
    document.getElementById("model-title").textContent = this.federation.title;
    this.models.render();
    this.setState(t("Loading…"), "loading");
    this.drawing.show(false);
    for (const id of ["view3d", "navcube", "view-toolbar", "navigator"]) document.getElementById(id).hidden = false;
    try {
      const entries = models.filter((m) => m.status === "ready").map((m) => ({ ...m, label: [m.discipline, m.name].filter(Boolean).join(" · ") }));
      const failed = await this.view3d.loadFederation(entries);
      for (const { modelId, error } of failed) toast(t("The model {name} could not be loaded: {error}", { name: (listed(modelId) || {}).name || modelId, error }), "error");
      this.setState("");
    } catch (error) {
      this.setState(t("The model could not be loaded: {error}", { error: errorText(error) }), "error");
    }
    await this.modelPanels(this.model);
    return true;
  }

  // in the federated view, a picked element's model becomes the open model (its overrides, issues and rights)
  async followPickedModel(meta) {
    if (!this.federation || !meta) return;
    const modelId = this.view3d.modelOf(meta.id);
    if (!modelId || modelId === this.model.id) return;
    const entry = this.federation.models.find((m) => m.modelId === modelId);
    this.model = this.models.models.find((m) => m.id === modelId) || { id: modelId, name: entry ? entry.name : modelId, status: "ready", format: "ifc" };
    await this.account.modelOpened(modelId);
    this.models.render();
    await this.modelPanels(this.model);
  }

  async openProject(project) {
    this.closeModel();
    this.models.render();
    document.getElementById("model-title").textContent = project.title;
    this.setState(t("The agent creates this project's drawing: ask it in the chat"));
    this.showTab("chat");
    await (await this.panel("chat")).openProject(project.projectId);
  }

  closeModel() {
    this.model = null;
    this.federation = null;
    this.account.modelClosed();
    if (this.hashModelId()) window.history.replaceState(null, "", window.location.pathname + window.location.search);
    this.onScreen = null;
    this.view3d.unload();
    this.drawing.unload();
    document.getElementById("model-title").textContent = "";
    this.showOnScreen();
    this.setState(t("Select a model"));
  }

  // loading: the view's load already under way (from the address), else one is started
  async loadGeometry(model, loading = null) {
    this.setState(t("Loading…"), "loading");
    this.badge.hidden = true;
    const drawing = model.format === "dxf";
    this.drawing.show(drawing);
    for (const id of ["view3d", "navcube", "view-toolbar"]) document.getElementById(id).hidden = drawing;
    document.getElementById("navigator").hidden = drawing;
    try {
      const geometry = loading ? loading.then((result) => { if (result instanceof Error) throw result; return result; }) : this.view.load(model.id);
      const [, state] = await Promise.all([geometry, drawing ? null : this.api.get(`/models/${model.id}/script`).catch(() => null)]);
      this.onScreen = drawing ? null : { modelId: model.id, scripted: Boolean(state && state.script), version: state && state.script && state.source === "version" ? state.version : null, stale: false };
      this.setState("");
    } catch (error) {
      this.onScreen = null;
      this.setState(t("The model could not be loaded: {error}", { error: errorText(error) }), "error");
    }
    this.showOnScreen();
  }

  showOnScreen() {
    const label = document.getElementById("on-screen");
    label.hidden = !this.onScreen;
    label.textContent = this.onScreen ? t("On screen: {label}", { label: versionLabel(this.onScreen) }) : "";
    label.classList.toggle("stale", Boolean(this.onScreen && this.onScreen.stale));
    if (this.panels.diff) this.panels.diff.then((diff) => diff.onScreenChanged());
    this.models.render(); // a new revision can be uploaded for an uploaded model on screen, not a script-built one
  }

  setPicked(meta) {
    this.picked = meta;
    this.properties.show(meta);
    this.issues.pickedChanged(meta);
    if (meta && this.view === this.view3d) this.navigator.revealPicked(meta.id);
    if (this.federation) this.followPickedModel(meta);
  }

  markStale() {
    if (this.onScreen) this.onScreen.stale = true;
    this.showOnScreen();
  }

  showStagedBadge(data) {
    if (this.model && data.modelId === this.model.id) {
      this.badge.hidden = false;
      this.markStale();
      if (this.panels.script) this.panels.script.then((script) => script.load());
    }
  }

  productChanged() {
    // a run, save, rollback or discard queued a reconversion: reload the geometry once it is ready
    this.badge.hidden = false;
    this.markStale();
    this.awaitProduct(t("Converting the new product…"));
  }

  // the open model's geometry loads once its conversion ends (modelsChanged; the list polls while it converts)
  awaitProduct(text) {
    this.waitingForProduct = true;
    this.setState(text, "loading");
    this.models.refresh();
  }

  reloadWhenReady() {
    this.productChanged();
  }
}

// called by the page's entry (boot.js) with the model files it started downloading
export function start(downloads) {
  window.viewerApp = new App(downloads);
}
// what nothing caught (a rejected promise, an error thrown in a viewer handler or timer) is shown, not only logged
window.addEventListener("unhandledrejection", (event) => toast(errorText(event.reason), "error"));
window.addEventListener("error", (event) => toast(errorText(event.error || event.message), "error"));
export { guarded };
