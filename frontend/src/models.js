// The model list: status, conversion progress (polled every 2 s while any model converts), retry, upload, a new
// revision of the uploaded model on screen, delete (to the trash).
import { t } from "./i18n.js";
import { guarded, h, replace, toast } from "./ui.js";

const POLL_MS = 2000;

export class ModelList {
  constructor(app) {
    this.app = app;
    this.models = [];
    this.timer = null;
    this.list = document.getElementById("model-list");
    document.getElementById("upload").addEventListener("change", (event) => this.upload(event.target));
    document.getElementById("new-project").addEventListener("click", () => this.newProject("ifc"));
    for (const id of ["new-cad-project", "new-cad-ifc-project"]) {
      const button = document.getElementById(id);
      button.addEventListener("click", () => { button.closest("details").open = false; this.newProject(button.dataset.kind); });
    }
    // the "⋯" menu lies over the model list: a click anywhere else closes it
    const more = document.querySelector(".panel-actions .more");
    document.addEventListener("click", (event) => { if (more.open && !more.contains(event.target)) more.open = false; });
  }

  async refresh() {
    const models = await guarded(() => this.app.api.get("/models"), "Loading the models failed");
    this.app.setOffline(models === undefined);
    if (models) {
      this.models = models;
      this.render();
      this.app.modelsChanged(models);
    }
    clearTimeout(this.timer);
    if (models === undefined || this.models.some((m) => m.status === "converting")) {
      this.timer = setTimeout(() => this.refresh(), POLL_MS);
    }
  }

  render() {
    if (!this.models.length) {
      replace(this.list, h("li", { class: "empty", "data-testid": "models-empty", i18n: "No models yet: create a project or upload an IFC." }));
      return;
    }
    replace(this.list, this.models.map((model) => this.item(model)));
  }

  item(model) {
    const current = this.app.model && this.app.model.id === model.id;
    const progress = model.progress;
    return h("li", { class: `model ${model.status}${current ? " current" : ""}`, dataset: { modelId: model.id, testid: "model-item" } },
      h("button", { class: "open", onClick: () => this.app.openModel(model.id), disabled: model.status !== "ready" && !current }, model.name),
      h("span", { class: `status ${model.status}`, "data-testid": "model-status", title: t(model.status) }, model.status),
      progress && h("div", { class: "progress", title: `${progress.phase} ${progress.percent}%` },
        h("div", { class: "bar", style: `width:${progress.percent}%` }), h("span", {}, `${progress.phase} ${progress.percent}%`)),
      model.status === "failed" && h("div", { class: "error", "data-testid": "model-error" }, model.error),
      h("button", { type: "button", class: "delete link", "data-testid": "delete-model", i18n: "Delete", i18nTitle: "Move this model to the trash",
        "data-needs": current ? "own" : null, onClick: () => this.remove(model) }),
      model.status === "failed" && h("button", { class: "retry", "data-testid": "retry", i18n: "Retry", "data-needs": current ? "edit" : null, onClick: () => this.retry(model.id) }),
      this.takesRevisions(model) && h("label", { class: "link revision", "data-testid": "revision-button", "data-needs": "edit", i18nTitle: "Upload the next export of this model: same model, a new version" },
        h("span", { i18n: "New revision…" }),
        h("input", { type: "file", accept: ".ifc", hidden: true, "data-testid": "revision-upload", onChange: (event) => this.uploadRevision(model, event.target) })),
    );
  }

  // the model on screen, when it is an uploaded IFC (a script-built model gets its versions by saving)
  takesRevisions(model) {
    const onScreen = this.app.onScreen;
    return model.format !== "dxf" && model.status === "ready" && Boolean(onScreen && onScreen.modelId === model.id && !onScreen.scripted);
  }

  async uploadRevision(model, input) {
    const file = input.files[0];
    input.value = "";
    if (!file) return;
    const form = new FormData();
    form.append("file", file, file.name);
    const answer = await guarded(() => this.app.api.upload(`/models/${model.id}/revisions`, form), "Uploading the revision failed");
    if (!answer) return;
    toast(t("{name}: revision {version} uploaded; converting", { name: model.name, version: answer.revision.version }));
    if (this.app.model && this.app.model.id === model.id) {
      this.app.productChanged();
      if (this.app.panels.diff) this.app.panels.diff.then((diff) => diff.load()); // the new revision is a version to compare
    } else this.refresh();
  }

  async retry(modelId) {
    await guarded(() => this.app.api.post(`/models/${modelId}/retry`), "Retry failed");
    this.refresh();
  }

  async remove(model) {
    if (!window.confirm(t("Delete the model {name}? It goes to the trash with its issues and overrides.", { name: model.name }))) return;
    if ((await guarded(() => this.app.api.delete(`/models/${model.id}`), "Deleting the model failed")) === undefined) return;
    toast(t("{name} moved to the trash", { name: model.name }));
    this.refresh();
  }

  async upload(input) {
    const file = input.files[0];
    if (!file) return;
    const form = new FormData();
    form.append("file", file, file.name);
    const model = await guarded(() => this.app.api.upload("/models", form), "Upload failed");
    input.value = "";
    if (model) toast(`${model.name} uploaded; converting`);
    this.refresh();
  }

  async newProject(kind) {
    const title = window.prompt(t("Project title"), "AI 项目");
    if (title === null) return;
    const project = await guarded(() => this.app.api.post("/chat/projects", { title, kind }), "Creating the project failed");
    if (!project) return;
    if (kind === "ifc") {
      toast(`Project ${project.title} created; its model is converting`);
      this.refresh();
    } else {
      // a cad project starts blank: its chat is where the agent creates the drawing (init_model)
      toast(`Project ${project.title} created: ask the agent in the chat to draw it`);
      await this.app.openProject(project);
    }
  }
}
