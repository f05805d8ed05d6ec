// The 2D view of a DXF drawing: its render.json drawn as SVG (y up, original coordinates), keyed entities pickable,
// diff colours by key, unsupported entities as grey dashed outlines, a PNG snapshot for issues.
const SVG = "http://www.w3.org/2000/svg";
const ACI_COLOURS = { 1: "#d7301f", 2: "#c9a400", 3: "#2e9e3e", 4: "#1799ad", 5: "#2f5fd0", 6: "#b03cb0", 7: "#1d232b" };
const DIFF_COLOURS = { added: "#33bf4d", removed: "#d94033", changed: "#f29a1a" };

function svg(tag, attributes = {}) {
  const element = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attributes)) if (value !== undefined && value !== null) element.setAttribute(name, value);
  return element;
}

function arcPath(e) {
  const start = (e.startAngle * Math.PI) / 180;
  const end = (e.endAngle * Math.PI) / 180;
  const sweep = ((e.endAngle - e.startAngle) % 360 + 360) % 360;
  const [cx, cy] = e.center;
  const point = (a) => `${cx + e.radius * Math.cos(a)} ${cy + e.radius * Math.sin(a)}`;
  return `M ${point(start)} A ${e.radius} ${e.radius} 0 ${sweep > 180 ? 1 : 0} 1 ${point(end)}`;
}

export class DrawingView {
  constructor(api, containerId, onPick) {
    this.api = api;
    this.onPick = onPick;
    this.root = svg("svg", { class: "drawing", "data-testid": "drawing" });
    this.show(false);
    document.getElementById(containerId).prepend(this.root);
    this.render = null;
    this.picked = null;
    this.root.addEventListener("click", (event) => {
      const target = event.target.closest("[data-key]");
      this.select(target ? target.dataset.key : null, this.onPick);
    });
  }

  show(visible) {
    this.root.style.display = visible ? "" : "none"; // an <svg> has no `hidden` property
  }

  async load(modelId) {
    this.render = await this.api.file(`/v1/models/${modelId}/render.json`).then((response) => response.json());
    this.draw();
  }

  unload() {
    this.root.replaceChildren();
    this.render = null;
    this.picked = null;
  }

  layerColour(name) {
    const layer = (this.render.layers || []).find((l) => l.name === name);
    return ACI_COLOURS[Math.abs(layer ? layer.color : 7)] || "#6b7785";
  }

  draw() {
    const { bounds, entities, unsupported } = this.render;
    const min = bounds ? bounds.min : [0, 0];
    const max = bounds ? bounds.max : [1, 1];
    const margin = Math.max(max[0] - min[0], max[1] - min[1], 1) * 0.05;
    this.root.setAttribute("viewBox", `${min[0] - margin} ${-max[1] - margin} ${max[0] - min[0] + 2 * margin} ${max[1] - min[1] + 2 * margin}`);
    const world = svg("g", { transform: "scale(1,-1)", "stroke-width": `${margin / 15}`, fill: "none" });
    for (const e of entities) {
      const shape = this.shape(e);
      if (!shape) continue;
      shape.setAttribute("stroke", this.layerColour(e.layer));
      if (e.key) shape.dataset.key = e.key;
      world.append(shape);
    }
    for (const item of unsupported) {
      if (item.coords.length < 2) continue;
      world.append(svg("polyline", { points: item.coords.map((p) => p.join(",")).join(" "), stroke: "#9aa3ad", "stroke-dasharray": `${margin / 5}`, class: "unsupported" }));
    }
    this.root.replaceChildren(world);
  }

  shape(e) {
    switch (e.type) {
      case "LINE": return svg("line", { x1: e.start[0], y1: e.start[1], x2: e.end[0], y2: e.end[1] });
      case "ARC": return svg("path", { d: arcPath(e) });
      case "CIRCLE": return svg("circle", { cx: e.center[0], cy: e.center[1], r: e.radius });
      case "POINT": return svg("circle", { cx: e.position[0], cy: e.position[1], r: 0.05 });
      case "TEXT": case "ATTRIB": case "MTEXT": {
        const text = svg("text", { x: e.position[0], y: -e.position[1], "font-size": e.height, transform: `scale(1,-1) rotate(${-e.rotation} ${e.position[0]} ${-e.position[1]})`, stroke: "none" });
        text.textContent = e.text;
        text.style.fill = "currentColor";
        return text;
      }
      default: return null; // INSERT: its children follow it
    }
  }

  metaObject(key) {
    const entity = this.render && this.render.entities.find((e) => e.key === key);
    return entity ? { id: key, name: entity.text || key, type: `${entity.type} on ${entity.layer}`, propertySets: [] } : null;
  }

  select(key, onPick) {
    for (const element of this.root.querySelectorAll(".picked")) element.classList.remove("picked");
    this.picked = key;
    if (key) for (const element of this.root.querySelectorAll(`[data-key="${CSS.escape(key)}"]`)) element.classList.add("picked");
    if (onPick) onPick(key ? this.metaObject(key) : null);
  }

  showDiff(diff) {
    this.clearDiff();
    for (const [kind, keys] of Object.entries({ added: diff.added, changed: diff.changed.map((c) => c.guid) })) {
      for (const key of keys) for (const element of this.root.querySelectorAll(`[data-key="${CSS.escape(key)}"]`)) element.style.stroke = DIFF_COLOURS[kind];
    }
  }

  clearDiff() {
    for (const element of this.root.querySelectorAll("[data-key]")) element.style.stroke = "";
  }

  camera() {
    return undefined; // a drawing has no camera; issues keep the element and the snapshot
  }

  flyTo() {}

  async snapshotBlob() {
    const box = this.root.getBoundingClientRect();
    const markup = new XMLSerializer().serializeToString(this.root);
    const image = new Image();
    image.src = `data:image/svg+xml;charset=utf-8,${encodeURIComponent(markup)}`;
    await image.decode();
    const canvas = document.createElement("canvas");
    canvas.width = Math.max(1, Math.round(box.width));
    canvas.height = Math.max(1, Math.round(box.height));
    const context = canvas.getContext("2d");
    context.fillStyle = "#fff";
    context.fillRect(0, 0, canvas.width, canvas.height);
    context.drawImage(image, 0, 0, canvas.width, canvas.height);
    return new Promise((resolve) => canvas.toBlob(resolve, "image/png"));
  }
}
