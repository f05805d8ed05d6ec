// The 3D view: xeokit-sdk loading model.xkt + metadata.json of one model; picking, highlighting, camera, snapshot.
import { NavCubePlugin, Viewer, XKTLoaderPlugin } from "@xeokit/xeokit-sdk";

const DIFF_COLOURS = { added: [0.2, 0.75, 0.3], removed: [0.85, 0.25, 0.2], changed: [0.95, 0.6, 0.1] };

export class ModelView {
  constructor(canvasId, navCubeCanvasId, onPick) {
    this.viewer = new Viewer({ canvasId, transparent: false, saoEnabled: false, dtxEnabled: true });
    this.viewer.scene.canvas.backgroundColor = [0.93, 0.94, 0.96];
    this.loader = new XKTLoaderPlugin(this.viewer);
    new NavCubePlugin(this.viewer, { canvasId: navCubeCanvasId, visible: true });
    this.model = null;
    this.picked = null;
    this.viewer.cameraControl.on("picked", (result) => {
      if (result.entity) this.select(result.entity.id, onPick);
    });
    this.viewer.cameraControl.on("pickedNothing", () => this.select(null, onPick));
  }

  load(modelId, version) {
    this.unload();
    return new Promise((resolve, reject) => {
      const suffix = version ? `?v=${encodeURIComponent(version)}` : "";
      this.model = this.loader.load({
        id: modelId,
        src: `/v1/models/${modelId}/model.xkt${suffix}`,
        metaModelSrc: `/v1/models/${modelId}/metadata.json${suffix}`,
        edges: true,
      });
      this.model.on("loaded", () => {
        Object.assign(this.viewer.camera, { eye: [1, 0.8, 1], look: [0, 0, 0], up: [0, 1, 0] }); // an isometric direction
        this.viewer.cameraFlight.jumpTo({ aabb: this.viewer.scene.getAABB(), fit: true });
        resolve(this.model);
      });
      this.model.on("error", (message) => reject(new Error(String(message))));
    });
  }

  unload() {
    if (this.model) this.model.destroy();
    this.model = null;
    this.picked = null;
  }

  metaObject(id) {
    return this.viewer.metaScene.metaObjects[id] || null;
  }

  select(id, onPick) {
    this.viewer.scene.setObjectsSelected(this.viewer.scene.selectedObjectIds, false);
    this.picked = id;
    if (id && this.viewer.scene.objects[id]) this.viewer.scene.objects[id].selected = true;
    if (onPick) onPick(id ? this.metaObject(id) : null);
  }

  showDiff(diff) {
    this.clearDiff();
    for (const [kind, ids] of Object.entries({ added: diff.added, removed: diff.removed, changed: diff.changed.map((c) => c.guid) })) {
      for (const id of ids) {
        const object = this.viewer.scene.objects[id];
        if (object) object.colorize = DIFF_COLOURS[kind];
      }
    }
  }

  clearDiff() {
    this.viewer.scene.setObjectsColorized(this.viewer.scene.colorizedObjectIds, null);
  }

  camera() {
    const { eye, look, up } = this.viewer.camera;
    return { eye: Array.from(eye), look: Array.from(look), up: Array.from(up) };
  }

  flyTo(camera) {
    this.viewer.cameraFlight.flyTo({ eye: camera.eye, look: camera.look, up: camera.up, duration: 0.6 });
  }

  async snapshotBlob() {
    const dataURL = this.viewer.getSnapshot({ format: "png", includeGizmos: false });
    return (await fetch(dataURL)).blob();
  }
}
