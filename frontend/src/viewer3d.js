// The 3D view: xeokit-sdk loading model.xkt + metadata.json of one model, and the reviewer's tools, all xeokit's
// own plugins: picking, hide / isolate / X-ray / show all / fit (ContextMenu and keys), section planes
// (SectionPlanesPlugin: add on a surface, drag with its gizmo, flip, clear), distance measurement
// (DistanceMeasurementsPlugin with its mouse control and snapping), a 2D plan of one storey (StoreyViewsPlugin),
// BCF viewpoints (BCFViewpointsPlugin: the view saved as and restored from a BCF-API 3.0 viewpoint), and the colours
// of a version diff with the unchanged elements ghosted, its removed elements drawn from the base version's geometry
// (a second model of the same loader) when the current one lacks them.
// A project's models can be shown together (federated): each its own model of the same loader, placed by its
// model -> project matrix; entity ids stay GlobalIds (unique across models), and each entity knows its model.
import {
  BCFViewpointsPlugin, ContextMenu, DistanceMeasurementsMouseControl, DistanceMeasurementsPlugin, NavCubePlugin, PointerLens,
  Mesh, PhongMaterial, ReadableGeometry, SectionPlanesPlugin, StoreyViewsPlugin, Viewer, XKTDefaultDataSource, XKTLoaderPlugin,
  buildSphereGeometry, math,
} from "@xeokit/xeokit-sdk";
import { t } from "./i18n.js";
import { toast } from "./ui.js";

export const DIFF_COLOURS = { added: [0.1, 0.75, 0.2], removed: [0.9, 0.15, 0.1], changed: [1.0, 0.55, 0.0] };
const FIT_SECONDS = 0.5;
const IFC_GUID = /^[0-9A-Za-z_$]{22}$/;
// BCF: a clipping plane's direction points into the half-space that is cut away; xeokit's renderer cuts away the
// half-space behind a SectionPlane's dir, so directions are reversed both ways (buildingSMART/BCF-XML issue 193)
const CLIPPING_REVERSED = true;

// the two elements of a clash: set A's and set B's colour
export const CLASH_COLOURS = { a: [0.85, 0.2, 0.15], b: [0.15, 0.45, 0.9] };
const CLASH_POINT_COLOUR = [1.0, 0.85, 0.0];

// The conversion turned IFC's Z-up (x, y, z) into the XKT's Y-up (x, z, -y): C = rows (1 0 0), (0 0 1), (0 -1 0).
export function yUpPoint([x, y, z]) {
  return [x, z, -y];
}

// A model -> project matrix of the API (column-major, Z-up) as xeokit's (column-major, Y-up): C M C⁻¹, C⁻¹ = Cᵀ
export function yUpMatrix(matrix) {
  const C = [[1, 0, 0, 0], [0, 0, 1, 0], [0, -1, 0, 0], [0, 0, 0, 1]];
  const at = (row, column) => matrix[column * 4 + row];
  const out = new Array(16).fill(0);
  for (let r = 0; r < 4; r += 1) for (let c = 0; c < 4; c += 1) {
    let sum = 0;
    for (let i = 0; i < 4; i += 1) for (let j = 0; j < 4; j += 1) sum += C[r][i] * at(i, j) * C[c][j];
    out[c * 4 + r] = sum;
  }
  return out;
}

// xeokit's data source, which first takes a file the page's entry started downloading (boot.js), once; any other
// file, or one whose early download failed, is requested as usual. The cache-busting time stamp query xeokit adds
// to every URL by default is off: it defeats the HTTP cache (the gateway answers If-None-Match with 304).
class EarlyDataSource extends XKTDefaultDataSource {
  constructor(early) {
    super({ cacheBuster: false });
    this.early = early;
  }

  take(src, read, ok, fallback) {
    const response = this.early.get(src);
    if (!response) return fallback();
    this.early.delete(src);
    response.then((r) => (r && r.ok ? read(r) : null)).catch(() => null).then((data) => (data === null ? fallback() : ok(data)));
  }

  getMetaModel(src, ok, error) {
    this.take(src, (response) => response.json(), ok, () => super.getMetaModel(src, ok, error));
  }

  getXKT(src, ok, error) {
    this.take(src, (response) => response.arrayBuffer(), ok, () => super.getXKT(src, ok, error));
  }
}

function editableTarget(target) {
  return target && (target.isContentEditable || ["INPUT", "TEXTAREA", "SELECT"].includes(target.tagName) || target.closest(".cm-editor"));
}

export class ModelView {
  // early: URL -> Promise of the Response of a model file already being downloaded (see EarlyDataSource)
  constructor(canvasId, navCubeCanvasId, onPick, early = new Map()) {
    this.onPick = onPick;
    this.viewer = new Viewer({ canvasId, transparent: false, saoEnabled: false, dtxEnabled: true });
    const scene = this.viewer.scene;
    this.viewer.camera.perspective.fovAxis = "y"; // BCF 3.0's FieldOfView is the vertical angle, whatever the canvas's shape
    scene.canvas.backgroundColor = [0.93, 0.94, 0.96];
    Object.assign(scene.xrayMaterial, { fill: true, fillAlpha: 0.08, fillColor: [0.45, 0.5, 0.55], edges: true, edgeAlpha: 0.25, edgeColor: [0.3, 0.35, 0.4] });
    this.early = early;
    this.loader = new XKTLoaderPlugin(this.viewer, { dataSource: new EarlyDataSource(early) });
    this.navCubeCanvasId = navCubeCanvasId;
    this.model = null;
    this.federated = null; // a project's models shown together: Map modelId -> SceneModel (this.model is the first)
    this.clashMarks = null; // the point of the clash shown, and the objects it coloured
    this.versionModel = null; // elements of a saved version shown beside the model (a diff's removed elements)
    this.picked = null;
    this.mode = "select";
    this.listeners = new Set(); // (event) => void: "mode", "loaded", "unloaded", "diff", "plan", "sections", "visibility"
  }

  // the tools, made after the constructor so that a model load can start first (its download overlaps them); the
  // navigation cube comes after the first model's first frame (showLoaded)
  initTools() {
    this.sections = new SectionPlanesPlugin(this.viewer);
    this.measurements = new DistanceMeasurementsPlugin(this.viewer);
    this.measureControl = new DistanceMeasurementsMouseControl(this.measurements, { pointerLens: new PointerLens(this.viewer), snapping: true });
    this.storeyViews = new StoreyViewsPlugin(this.viewer);
    const centredPicks = new WeakSet();
    this.bcf = new BCFViewpointsPlugin(this.viewer, { originatingSystem: "Model review", authoringTool: "Model review web client" });
    this.viewer.cameraControl.on("picked", (result) => {
      // xeokit pivots about a surface pick's worldPos after this event (setPivotPos: a TypeError without one); a
      // pick of what cannot report a surface position (a Mesh on VBO geometry) has none: it pivots about the picked
      // object's centre then, which is no surface to place a section plane on
      if (result.entity && !result.worldPos) {
        result.worldPos = math.getAABB3Center(result.entity.aabb);
        centredPicks.add(result);
      }
      if (this.mode === "select" && result.entity) this.select(result.entity.id, this.onPick);
    });
    this.viewer.cameraControl.on("pickedNothing", () => { if (this.mode === "select") this.select(null, this.onPick); });
    this.viewer.cameraControl.on("pickedSurface", (result) => { if (this.mode === "section" && !centredPicks.has(result)) this.addSectionPlane(result.worldPos, result.worldNormal); });
    this.objectMenu = new ContextMenu({ items: this.objectMenuItems(), enabled: true });
    this.viewer.cameraControl.on("rightClick", (event) => {
      const hit = this.viewer.scene.pick({ canvasPos: event.canvasPos, pickSurface: true });
      const ids = hit && hit.entity ? [hit.entity.id] : this.selectedIds();
      if (hit && hit.entity && !this.selectedIds().includes(hit.entity.id)) this.select(hit.entity.id, this.onPick);
      this.showMenu(event.event.pageX, event.event.pageY, { ids, worldPos: hit && hit.worldPos, worldNormal: hit && hit.worldNormal });
      event.event.preventDefault();
    });
    document.addEventListener("keydown", (event) => this.key(event));
    this.takeFocusOnClick();
    this.reportErrors();
  }

  // A click on the model takes the focus from a field (the canvas is focusable), so that the view's keys act on the
  // view instead of typing into the field; xeokit's own mouse handling keeps the browser from moving the focus.
  takeFocusOnClick() {
    const canvas = this.viewer.scene.canvas.canvas;
    canvas.tabIndex = -1;
    canvas.addEventListener("pointerdown", () => canvas.focus({ preventScroll: true }), { capture: true });
  }

  // Errors xeokit reports (the scene's "error" event) are shown, not only logged; those thrown in its input handlers
  // and timers reach the window uncaught and are shown by the page's one handler of uncaught errors (main.js)
  reportErrors() {
    this.viewer.scene.on("error", (message) => toast(t("The 3D view failed: {error}", { error: message }), "error"));
  }

  on(listener) {
    this.listeners.add(listener);
  }

  emit(event) {
    for (const listener of this.listeners) listener(event);
  }

  // --- loading ----------------------------------------------------------------------------------------------

  load(modelId) {
    this.unload();
    return new Promise((resolve, reject) => {
      // no cache-busting query: the gateway answers If-None-Match with 304 while the file is unchanged (no-cache)
      this.model = this.loader.load({
        id: modelId,
        src: `/v1/models/${modelId}/model.xkt`,
        metaModelSrc: `/v1/models/${modelId}/metadata.json`,
        edges: false, // on from the frame after the first (showLoaded)
      });
      this.model.on("loaded", () => {
        performance.mark("viewer:model-loaded");
        performance.mark(`viewer:model-loaded:${modelId}`);
        this.showLoaded(this.viewer.scene.getAABB());
        this.emit({ type: "loaded", modelId });
        resolve(this.model);
      });
      this.model.on("error", (message) => reject(new Error(String(message))));
    });
  }

  // The camera on `aabb` from an isometric direction; the first frame drawn then is marked (viewer:first-frame).
  // That frame is drawn without the models' edges, shown from the next: the edges' shader programs, compiled while
  // the frame is drawn (the browser waits for each), took its time from the model loaded to the frame drawn from ~250
  // to ~50 ms (AC20-FZK-Haus in SwiftShader; docs/benchmarks/2026-11-27-speed-goals.md).
  // The navigation cube, a WebGL context of its own, is made after that frame once the page is idle, i.e. after the
  // tree (built in the next animation frame, navigator.js): made beside the loading model, its GPU work (context,
  // shaders, texture) queued before the model's, whose shaders then compiled 2.5x slower (SwiftShader); made right
  // after the first frame, its context waited ~2.5 s behind that frame's drawing and delayed the tree.
  showLoaded(aabb) {
    Object.assign(this.viewer.camera, { eye: [1, 0.8, 1], look: [0, 0, 0], up: [0, 1, 0], projection: "perspective" });
    this.viewer.cameraFlight.jumpTo({ aabb, fit: true });
    this.viewer.scene.once("rendered", () => {
      performance.mark("viewer:first-frame");
      // loaded without them (load, loadFederation); a project's models still loading take them as they are built
      for (const model of this.federated ? this.federated.values() : [this.model]) if (model && !model.destroyed) model.edges = true;
      if (!this.navCube) requestAnimationFrame(() => requestIdleCallback(() => {
        this.navCube = this.navCube || new NavCubePlugin(this.viewer, { canvasId: this.navCubeCanvasId, visible: true });
      }));
    });
  }

  // A project's ready models in one view, each placed by its model -> project matrix (the federation's entries:
  // {modelId, matrix, label}). The first model parsed shows at once; the camera takes in all of them once all are
  // loaded (unless it was moved meanwhile), and the tree and tools follow then ("loaded"). Resolves with the entries
  // that failed to load ({modelId, error}); the others show.
  async loadFederation(entries) {
    this.unload();
    const models = new Map();
    this.federated = models;
    let shown = null; // the camera once the first model showed
    const loads = entries.map((entry) => new Promise((resolve) => {
      // as position, quaternion and scale: xeokit 2.6's SceneModel ignores a `matrix` given at construction
      const [position, quaternion, scale] = [math.vec3(), math.vec4(), math.vec3()];
      math.decomposeMat4(yUpMatrix(entry.matrix), position, quaternion, scale);
      const model = this.loader.load({
        id: entry.modelId, src: `/v1/models/${entry.modelId}/model.xkt`, metaModelSrc: `/v1/models/${entry.modelId}/metadata.json`,
        edges: false, position: Array.from(position), quaternion: Array.from(quaternion), scale: Array.from(scale), // on from the frame after the first (showLoaded)
      });
      models.set(entry.modelId, model);
      model.on("loaded", () => {
        performance.mark(`viewer:model-loaded:${entry.modelId}`);
        if (!shown && this.federated === models) {
          this.showLoaded(model.aabb);
          shown = this.camera();
        }
        resolve(null);
      });
      model.on("error", (message) => resolve({ modelId: entry.modelId, error: String(message) }));
    }));
    this.model = models.values().next().value || null;
    const failed = (await Promise.all(loads)).filter(Boolean);
    if (this.federated !== models) return failed; // unloaded or replaced meanwhile
    for (const { modelId } of failed) { models.get(modelId).destroy(); models.delete(modelId); }
    this.model = models.values().next().value || null;
    if (!this.model) throw new Error(failed.map((f) => f.error).join("; ") || "no model");
    performance.mark("viewer:model-loaded");
    if (JSON.stringify(this.camera()) === JSON.stringify(shown)) this.viewer.cameraFlight.jumpTo({ aabb: this.viewer.scene.getAABB(), fit: true });
    const onScreen = entries.filter((entry) => models.has(entry.modelId)).map((entry) => ({ id: entry.modelId, label: entry.label }));
    this.emit({ type: "loaded", modelId: this.model.id, models: onScreen });
    return failed;
  }

  // the ids of the models on screen (one, or a project's models)
  modelIds() {
    if (this.federated) return [...this.federated.keys()];
    return this.model ? [this.model.id] : [];
  }

  // the model an element (a GlobalId) belongs to, among those on screen
  modelOf(id) {
    const object = this.viewer.scene.objects[id];
    if (object && object.model && object.model.id !== (this.versionModel && this.versionModel.id)) return object.model.id;
    const meta = this.metaObject(id);
    const metaModel = meta && (meta.metaModels ? meta.metaModels[0] : meta.metaModel);
    return metaModel ? metaModel.id : null;
  }

  // a whole model of the federated view shown or hidden, X-rayed or not, or alone (isolated); its state: shown
  // while any of its objects is, X-rayed while any is
  modelState(modelId) {
    const model = this.viewer.scene.models[modelId];
    return { visible: Boolean(model && model.visible), xrayed: Boolean(model && model.xrayed) };
  }

  setModelVisible(modelId, visible) {
    const model = this.viewer.scene.models[modelId];
    if (model) model.visible = visible;
    this.emit({ type: "visibility" });
  }

  setModelXrayed(modelId, xrayed) {
    const model = this.viewer.scene.models[modelId];
    if (model) model.xrayed = xrayed;
    this.emit({ type: "visibility" });
  }

  isolateModel(modelId) {
    this.clearClash();
    for (const id of this.modelIds()) {
      const model = this.viewer.scene.models[id];
      if (model) model.visible = id === modelId;
    }
    const model = this.viewer.scene.models[modelId];
    if (model) this.viewer.cameraFlight.flyTo({ aabb: model.aabb, duration: FIT_SECONDS });
    this.emit({ type: "visibility" });
  }

  // A clash: its two elements alone (the others hidden), A's and B's colours, a little translucent so the point
  // inside them shows; a marker at the point (project frame, Z-up); the camera flies to the pair. Returns the
  // GlobalIds the view has.
  showClash(clash) {
    this.clearClash();
    const scene = this.viewer.scene;
    const ids = [clash.a.guid, clash.b.guid].filter((id) => scene.objects[id]);
    scene.setObjectsSelected(scene.selectedObjectIds, false);
    scene.setObjectsXRayed(scene.xrayedObjectIds, false);
    scene.setObjectsVisible(scene.visibleObjectIds, false);
    scene.setObjectsVisible(ids, true);
    for (const [side, id] of [["a", clash.a.guid], ["b", clash.b.guid]]) {
      const object = scene.objects[id];
      if (!object) continue;
      object.colorize = CLASH_COLOURS[side];
      object.opacity = 0.55;
    }
    const centre = yUpPoint(clash.point);
    const aabb = ids.length ? scene.getAABB(ids) : math.collapseAABB3();
    if (!ids.length) math.expandAABB3Point3(aabb, centre);
    const size = Math.max(aabb[3] - aabb[0], aabb[4] - aabb[1], aabb[5] - aabb[2], 0.5);
    const marker = new Mesh(scene, {
      geometry: new ReadableGeometry(scene, buildSphereGeometry({ radius: Math.min(0.25, Math.max(0.02, size / 60)) })),
      material: new PhongMaterial(scene, { diffuse: CLASH_POINT_COLOUR, emissive: CLASH_POINT_COLOUR }),
      position: centre, pickable: false, collidable: false, clippable: false, isObject: false,
    });
    this.clashMarks = { marker, ids };
    this.viewer.cameraFlight.flyTo({ aabb, duration: FIT_SECONDS });
    this.emit({ type: "visibility" });
    return ids;
  }

  clearClash() {
    const marks = this.clashMarks;
    this.clashMarks = null;
    if (!marks) return;
    marks.marker.destroy();
    const scene = this.viewer.scene;
    for (const id of marks.ids) {
      const object = scene.objects[id];
      if (object) Object.assign(object, { colorize: null, opacity: 1.0 });
    }
  }

  // the downloads the page's entry started are dropped unused: they are of a product being replaced
  dropEarlyDownloads() {
    this.early.clear();
  }

  unload() {
    this.clearClash();
    if (this.sections) {
      this.setMode("select");
      this.exitPlan(false);
      this.sections.clear();
      this.measurements.clear();
      this.viewer.scene.clearLines();
      this.viewer.scene.clearBitmaps();
    }
    this.unloadVersionElements();
    if (this.federated) for (const model of this.federated.values()) model.destroy();
    else if (this.model) this.model.destroy();
    this.federated = null;
    this.model = null;
    this.picked = null;
    this.diff = null;
    this.emit({ type: "unloaded" });
  }

  // Only the given elements of a saved version, from its converted geometry, as a second model (its own id) beside
  // the loaded one: the loader takes the entities whose meta objects are in `ids` (includeIds), and the meta scene
  // gets only those meta objects and their property sets, so the storeys, the tree and every other element stay
  // the loaded model's. A parent outside `ids` is dropped (it is the loaded model's, or gone). The diff's colours
  // are applied to them once loaded. Resolves with the ids drawn (none when unloaded before it finished).
  loadVersionElements(modelId, version, ids) {
    this.unloadVersionElements();
    const wanted = new Set(ids);
    const onlyWanted = (data) => {
      const metaObjects = (data.metaObjects || []).filter((meta) => wanted.has(meta.id)).map((meta) => (wanted.has(meta.parent) ? meta : { ...meta, parent: null }));
      const psets = new Set(metaObjects.flatMap((meta) => meta.propertySetIds || meta.propertySets || []));
      return { ...data, metaObjects, propertySets: (data.propertySets || []).filter((pset) => psets.has(pset.id)) };
    };
    const base = `/v1/models/${modelId}/versions/${version}`;
    const model = this.loader.load({
      id: `${modelId}@${version}`, src: `${base}/model.xkt`, metaModelSrc: `${base}/metadata.json`, edges: true,
      includeIds: ids, excludeUnclassifiedObjects: true, loadIntoMetaScene: onlyWanted,
    });
    this.versionModel = model;
    return new Promise((resolve, reject) => {
      model.on("loaded", () => {
        if (this.diff) this.applyDiff(this.diff);
        resolve(ids.filter((id) => this.has(id)));
      });
      model.on("destroyed", () => resolve([]));
      model.on("error", (message) => reject(new Error(String(message))));
    });
  }

  unloadVersionElements() {
    const model = this.versionModel;
    this.versionModel = null;
    if (!model) return;
    if (this.picked && model.objects[this.picked]) this.select(null);
    model.destroy();
  }

  metaObject(id) {
    return this.viewer.metaScene.metaObjects[id] || null;
  }

  has(id) {
    return Boolean(this.viewer.scene.objects[id]);
  }

  // --- selection and object states ----------------------------------------------------------------------------

  select(id, onPick = this.onPick) {
    const scene = this.viewer.scene;
    scene.setObjectsSelected(scene.selectedObjectIds, false);
    this.picked = id;
    if (id && scene.objects[id]) scene.objects[id].selected = true;
    if (onPick) onPick(id ? this.metaObject(id) : null);
  }

  selectedIds() {
    return [...this.viewer.scene.selectedObjectIds];
  }

  // the ids of every object (with geometry) under the given meta objects, themselves included
  objectIdsUnder(ids) {
    const result = new Set();
    for (const id of ids) {
      const meta = this.metaObject(id);
      const below = meta ? meta.getObjectIDsInSubtree() : [id];
      for (const objectId of below) if (this.viewer.scene.objects[objectId]) result.add(objectId);
    }
    return [...result];
  }

  hide(ids) {
    this.viewer.scene.setObjectsVisible(this.objectIdsUnder(ids), false);
  }

  isolate(ids) {
    const scene = this.viewer.scene;
    const keep = this.objectIdsUnder(ids);
    if (!keep.length) return;
    scene.setObjectsXRayed(scene.xrayedObjectIds, false);
    scene.setObjectsVisible(scene.visibleObjectIds, false);
    scene.setObjectsVisible(keep, true);
    this.fit(keep);
  }

  xray(ids, xrayed = true) {
    this.viewer.scene.setObjectsXRayed(this.objectIdsUnder(ids), xrayed);
  }

  toggleXray(ids) {
    const objects = this.objectIdsUnder(ids);
    const scene = this.viewer.scene;
    const anyPlain = objects.some((id) => !scene.objects[id].xrayed);
    scene.setObjectsXRayed(objects, anyPlain);
  }

  xrayOthers(ids) {
    const scene = this.viewer.scene;
    scene.setObjectsXRayed(scene.objectIds, true);
    scene.setObjectsXRayed(this.objectIdsUnder(ids), false);
  }

  showAll() {
    this.clearClash();
    const scene = this.viewer.scene;
    scene.setObjectsVisible(scene.objectIds, true);
    scene.setObjectsXRayed(scene.xrayedObjectIds, false);
    if (this.diff) this.applyDiff(this.diff);
    this.emit({ type: "visibility" });
  }

  fit(ids) {
    const objects = ids && ids.length ? this.objectIdsUnder(ids) : null;
    const aabb = objects && objects.length ? this.viewer.scene.getAABB(objects) : this.viewer.scene.getAABB(this.viewer.scene.visibleObjectIds);
    this.viewer.cameraFlight.flyTo({ aabb, duration: FIT_SECONDS });
  }

  fitAll() {
    this.viewer.cameraFlight.flyTo({ aabb: this.viewer.scene.getAABB(), duration: FIT_SECONDS });
  }

  // --- context menu and keys -------------------------------------------------------------------------------

  objectMenuItems() {
    const item = (title, action, enabled = (c) => c.ids.length > 0) => ({ getTitle: () => t(title), doAction: action, getEnabled: enabled });
    return [
      [
        item("Hide", (c) => this.hide(c.ids)),
        item("Isolate", (c) => this.isolate(c.ids)),
        item("X-ray", (c) => this.toggleXray(c.ids)),
        item("X-ray others", (c) => this.xrayOthers(c.ids)),
        item("Show all", () => this.showAll(), () => true),
      ],
      [
        item("Fit selection", (c) => this.fit(c.ids)),
        item("Fit all", () => this.fitAll(), () => true),
      ],
      [
        item("Section here", (c) => this.addSectionPlane(c.worldPos, c.worldNormal), (c) => Boolean(c.worldPos)),
        item("Clear sections", () => this.clearSections(), () => Object.keys(this.sections.sectionPlanes).length > 0),
      ],
    ];
  }

  showMenu(pageX, pageY, context) {
    this.objectMenu.context = { ids: [], ...context };
    this.objectMenu.hide();
    this.objectMenu.show(pageX, pageY);
  }

  key(event) {
    if (!this.model || editableTarget(event.target) || event.ctrlKey || event.metaKey || event.altKey) return;
    const ids = this.selectedIds();
    const actions = {
      h: () => this.hide(ids),
      i: () => this.isolate(ids),
      t: () => this.toggleXray(ids),
      u: () => this.showAll(),
      f: () => (event.shiftKey ? this.fitAll() : this.fit(ids)),
      escape: () => { this.setMode("select"); this.objectMenu.hide(); },
    };
    const action = actions[event.key.toLowerCase()];
    if (!action) return;
    event.preventDefault();
    action();
  }

  // --- tools: section planes, measurement ----------------------------------------------------------------------

  setMode(mode) {
    if (this.mode === mode) mode = "select"; // pressing an active tool again leaves it
    this.mode = mode;
    if (mode === "measure") this.measureControl.activate();
    else if (this.measureControl.active) this.measureControl.deactivate();
    if (mode !== "section") this.sections.hideControl();
    this.emit({ type: "mode", mode });
  }

  addSectionPlane(worldPos, worldNormal) {
    if (!worldPos) return null;
    const dir = worldNormal ? worldNormal.map((v) => -v) : [0, -1, 0];
    const plane = this.sections.createSectionPlane({ pos: Array.from(worldPos), dir });
    this.sections.showControl(plane.id); // drag the plane with its gizmo
    this.emit({ type: "sections" });
    return plane;
  }

  flipSections() {
    this.sections.flipSectionPlanes();
  }

  clearSections() {
    this.sections.clear();
    this.emit({ type: "sections" });
  }

  clearMeasurements() {
    this.measurements.clear();
  }

  // --- storey plan (StoreyViewsPlugin) ------------------------------------------------------------------------

  storeys() {
    return Object.values(this.storeyViews.storeys).map((storey) => ({ id: storey.storeyId, name: (this.metaObject(storey.storeyId) || {}).name || storey.storeyId, aabb: storey.storeyAABB }))
      .sort((a, b) => b.aabb[1] - a.aabb[1]);
  }

  enterPlan(storeyId) {
    if (!this.plan) this.plan = { camera: this.camera(), projection: this.viewer.camera.projection };
    this.viewer.scene.setObjectsXRayed(this.viewer.scene.xrayedObjectIds, false);
    this.storeyViews.showStoreyObjects(storeyId, { hideOthers: true });
    this.viewer.camera.projection = "ortho";
    this.storeyViews.gotoStoreyCamera(storeyId, { projection: "ortho" });
    this.viewer.cameraControl.navMode = "planView";
    this.plan.storeyId = storeyId;
    this.plan.map = this.storeyViews.createStoreyMap(storeyId, { width: 260, format: "png" });
    this.emit({ type: "plan", plan: this.plan });
    return this.plan.map;
  }

  pickOnPlan(imagePos) {
    if (!this.plan) return null;
    const hit = this.storeyViews.pickStoreyMap(this.plan.map, imagePos, { pickSurface: true });
    if (hit && hit.entity) this.select(hit.entity.id);
    return hit;
  }

  exitPlan(restore = true) {
    if (!this.plan) return;
    const { camera, projection } = this.plan;
    this.plan = null;
    this.viewer.cameraControl.navMode = "orbit";
    this.viewer.camera.projection = projection;
    if (restore) {
      this.showAll();
      this.viewer.cameraFlight.jumpTo(camera);
    }
    this.emit({ type: "plan", plan: null });
  }

  // --- version diff in 3D ------------------------------------------------------------------------------------

  // Unchanged elements ghosted (X-ray), added / changed / removed ones coloured; ids not in the loaded geometry
  // are returned, so the list can say so. The previous diff's version elements go.
  showDiff(diff) {
    this.unloadVersionElements();
    this.diff = diff;
    return this.applyDiff(diff);
  }

  applyDiff(diff) {
    const scene = this.viewer.scene;
    scene.setObjectsColorized(scene.colorizedObjectIds, null);
    scene.setObjectsVisible(scene.objectIds, true);
    scene.setObjectsXRayed(scene.objectIds, true);
    const missing = [];
    for (const [kind, ids] of Object.entries({ added: diff.added, removed: diff.removed, changed: diff.changed.map((c) => c.guid) })) {
      for (const id of ids) {
        const object = scene.objects[id];
        if (!object) { missing.push(id); continue; }
        object.xrayed = false;
        object.colorize = DIFF_COLOURS[kind];
      }
    }
    this.emit({ type: "diff", diff });
    return missing;
  }

  clearDiff() {
    const scene = this.viewer.scene;
    this.unloadVersionElements();
    this.diff = null;
    scene.setObjectsColorized(scene.colorizedObjectIds, null);
    scene.setObjectsXRayed(scene.xrayedObjectIds, false);
    this.emit({ type: "diff", diff: null });
  }

  flyToObject(id) {
    if (!this.has(id)) return false;
    this.select(id);
    this.fit([id]);
    return true;
  }

  // --- BCF viewpoints (xeokit's BCFViewpointsPlugin) ---------------------------------------------------------

  // The view as a BCF-API 3.0 viewpoint: camera, visibility, selection, colours (X-ray and opacity as colours with
  // alpha), section planes, lines, bitmaps. Without snapshot: the caller adds the canvas image. Components whose id
  // is no IFC GlobalId cannot travel in BCF and are left out.
  viewpoint() {
    const scene = this.viewer.scene;
    const spaces = this.viewer.metaScene.getObjectIDsByType("IfcSpace");
    const viewpoint = this.bcf.getViewpoint({
      snapshot: false, spacesVisible: spaces.some((id) => scene.objects[id] && scene.objects[id].visible), reverseClippingPlanes: CLIPPING_REVERSED,
    });
    if (viewpoint.orthogonal_camera) viewpoint.orthogonal_camera.view_to_world_scale = this.viewer.camera.ortho.scale / Math.max(1, this.aspectRatio());
    for (const camera of [viewpoint.perspective_camera, viewpoint.orthogonal_camera]) if (camera) camera.aspect_ratio = this.aspectRatio();
    const exchangeable = (components) => (components || []).filter((c) => IFC_GUID.test(c.ifc_guid || "") || c.authoring_tool_id);
    const components = viewpoint.components;
    components.selection = exchangeable(components.selection);
    components.visibility.exceptions = exchangeable(components.visibility.exceptions);
    components.coloring = components.coloring.map((c) => ({ ...c, components: exchangeable(c.components) })).filter((c) => c.components.length);
    delete components.translucency; // X-rayed objects are in coloring with their alpha; BCF 3.0 has no translucency
    return viewpoint;
  }

  // The objects back to their loaded state (all visible, no X-ray, colour, opacity, selection, section planes,
  // lines, bitmaps; no plan, no diff), then xeokit's setViewpoint. A stored bitmap comes as a URL, which xeokit's
  // Bitmap loads as its image source.
  applyViewpoint(viewpoint) {
    if (!this.model) return;
    const scene = this.viewer.scene;
    this.setMode("select");
    this.exitPlan(false);
    if (this.diff) this.clearDiff();
    this.sections.clear();
    scene.setObjectsVisible(scene.objectIds, true);
    scene.setObjectsXRayed(scene.xrayedObjectIds, false);
    scene.setObjectsColorized(scene.colorizedObjectIds, null);
    scene.setObjectsOpacity(scene.opacityObjectIds, 1.0);
    scene.setObjectsSelected(scene.selectedObjectIds, false);
    const bitmaps = (viewpoint.bitmaps || []).map((bitmap) => ({ ...bitmap, bitmap_data: bitmap.bitmap_data || bitmap.bitmap_url }));
    this.bcf.setViewpoint({ ...viewpoint, bitmaps }, { immediate: true, updateCompositeObjects: true, reverseClippingPlanes: CLIPPING_REVERSED });
    if (viewpoint.orthogonal_camera) this.viewer.camera.ortho.scale = viewpoint.orthogonal_camera.view_to_world_scale * Math.max(1, this.aspectRatio());
    this.showRequestedSpaces(viewpoint.components);
    const selected = this.selectedIds();
    this.picked = selected[0] || null;
    if (this.onPick) this.onPick(this.picked ? this.metaObject(this.picked) : null);
    this.emit({ type: "sections" });
  }

  // width / height of the canvas. BCF 3.0's view_to_world_scale is the view's visible height (metres); xeokit's
  // Ortho scale is the visible extent along the canvas's longer side: scale = height * max(1, aspect ratio)
  aspectRatio() {
    const [, , width, height] = this.viewer.scene.canvas.boundary;
    return width / height;
  }

  // The spaces a viewpoint asks for show: those it names (visible exceptions of a hidden-by-default view, or
  // selected), although its view setup hints hide spaces in general (buildingSMART's single_visible_space), and
  // with SpacesVisible every space but the hidden exceptions. xeokit's setViewpoint hides them all in the first case.
  showRequestedSpaces(components) {
    if (!components) return;
    const spaces = this.viewer.metaScene.getObjectIDsByType("IfcSpace");
    const visibility = components.visibility || {};
    const idsOf = (list) => (list || []).map((component) => component.ifc_guid || component.authoring_tool_id);
    let ids = [...(visibility.default_visibility ? [] : idsOf(visibility.exceptions)), ...idsOf(components.selection)];
    if ((visibility.view_setup_hints || {}).spaces_visible) {
      const hidden = new Set(visibility.default_visibility ? idsOf(visibility.exceptions) : []);
      ids = spaces.filter((id) => !hidden.has(id));
    }
    const wanted = new Set(spaces);
    this.viewer.scene.setObjectsVisible(ids.filter((id) => wanted.has(id)), true); // the space, not what it contains
  }

  // several objects selected at once (e.g. the failing elements of a check); returns the ids the view has
  selectMany(ids, fit = true) {
    const scene = this.viewer.scene;
    const present = ids.filter((id) => scene.objects[id]);
    scene.setObjectsSelected(scene.selectedObjectIds, false);
    scene.setObjectsSelected(present, true);
    this.picked = present[0] || null;
    if (this.onPick) this.onPick(this.picked ? this.metaObject(this.picked) : null);
    if (fit && present.length) this.fit(present);
    return present;
  }

  // --- camera, snapshot ------------------------------------------------------------------------------------

  camera() {
    const { eye, look, up } = this.viewer.camera;
    return { eye: Array.from(eye), look: Array.from(look), up: Array.from(up) };
  }

  flyTo(camera) {
    this.viewer.cameraFlight.flyTo({ eye: camera.eye, look: camera.look, up: camera.up, duration: 0.6 });
  }

  snapshotDataURL() {
    return this.viewer.getSnapshot({ format: "png", includeGizmos: false });
  }

  async snapshotBlob() {
    return (await fetch(this.snapshotDataURL())).blob();
  }
}
