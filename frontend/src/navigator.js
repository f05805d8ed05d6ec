// The object tree: xeokit's TreeViewPlugin by containment (site, building, storeys, spaces, elements), by IFC class
// and by storey, with its visibility checkboxes; a search by name, IFC class or GlobalId that reveals the node
// (TreeViewPlugin.showNode); right-click on a node for the same menu as in the 3D view, on the node's subtree.
// A tree is built the first time its tab is shown. A federated view's tree has one root per model, named by its
// discipline and name.
import { ContextMenu, TreeViewPlugin } from "@xeokit/xeokit-sdk";
import { t } from "./i18n.js";
import { h, replace, setText } from "./ui.js";

const HIERARCHIES = [
  { id: "containment", label: "Objects", autoExpandDepth: 3 },
  { id: "types", label: "Classes", autoExpandDepth: 0 },
  { id: "storeys", label: "Storeys", autoExpandDepth: 1 },
];
const MAX_RESULTS = 50;

export class Navigator {
  constructor(view, root) {
    this.view = view;
    this.root = root;
    this.trees = new Map(); // hierarchy -> TreeViewPlugin
    this.current = "containment";
    this.modelId = null;
    this.models = []; // [{id, label}]: the models on screen, each a root of the tree
    this.tabs = h("div", { class: "tree-tabs", role: "tablist" },
      HIERARCHIES.map((hierarchy) => h("button", { type: "button", role: "tab", i18n: hierarchy.label, dataset: { hierarchy: hierarchy.id, testid: `tree-tab-${hierarchy.id}` },
        onClick: () => this.showHierarchy(hierarchy.id) })));
    this.search = h("input", { type: "search", class: "tree-search", i18nPlaceholder: "Search name, class or GlobalId", "data-testid": "tree-search",
      onInput: () => this.find(this.search.value) });
    this.results = h("ul", { class: "tree-results", "data-testid": "tree-results", hidden: true });
    this.containers = new Map(HIERARCHIES.map((hierarchy) => [hierarchy.id, h("div", { class: "tree", dataset: { testid: `tree-${hierarchy.id}` }, hidden: true })]));
    replace(root, this.tabs, this.search, this.results, [...this.containers.values()]);
    this.menu = new ContextMenu({ items: view.objectMenuItems(), enabled: true });
    view.on((event) => {
      if (event.type === "loaded") this.modelLoaded(event.modelId, event.models);
      else if (event.type === "unloaded") this.modelId = null;
    });
  }

  modelLoaded(modelId, models = null) {
    for (const tree of this.trees.values()) tree.destroy();
    this.trees.clear();
    for (const container of this.containers.values()) container.replaceChildren();
    this.modelId = modelId;
    this.models = models || [{ id: modelId, label: null }];
    this.search.value = "";
    this.find("");
    // built after the first frame is drawn, so the model shows before the tree of a large model is made
    this.view.viewer.scene.once("rendered", () => requestAnimationFrame(() => {
      if (this.modelId !== modelId) return;
      this.showHierarchy(this.current);
      performance.mark("viewer:tree-ready");
    }));
  }

  showHierarchy(id) {
    this.current = id;
    for (const button of this.tabs.children) button.classList.toggle("active", button.dataset.hierarchy === id);
    for (const [hierarchy, container] of this.containers) container.hidden = hierarchy !== id;
    if (this.modelId && !this.trees.has(id)) this.trees.set(id, this.build(id));
  }

  build(id) {
    const hierarchy = HIERARCHIES.find((item) => item.id === id);
    const tree = new TreeViewPlugin(this.view.viewer, {
      containerElement: this.containers.get(id), hierarchy: id, autoAddModels: false, autoExpandDepth: hierarchy.autoExpandDepth,
      sortNodes: true, pruneEmptyNodes: true,
    });
    for (const model of this.models) tree.addModel(model.id, model.label ? { rootName: model.label } : {});
    tree.on("nodeTitleClicked", ({ treeViewNode }) => {
      this.clicking = true; // the node is in view already: the tree keeps its expanded nodes
      try {
        if (treeViewNode.objectId && this.view.has(treeViewNode.objectId)) this.view.select(treeViewNode.objectId);
        else if (treeViewNode.objectId) this.view.onPick(this.view.metaObject(treeViewNode.objectId));
      } finally {
        this.clicking = false;
      }
    });
    tree.on("contextmenu", ({ event, treeViewNode }) => {
      const ids = [];
      tree.withNodeTree(treeViewNode, (node) => { if (node.objectId) ids.push(node.objectId); });
      this.menu.context = { ids };
      this.menu.hide();
      this.menu.show(event.pageX, event.pageY);
    });
    return tree;
  }

  tree() {
    return this.trees.get(this.current);
  }

  // a pick in the 3D view reveals the element's node (not a click in the tree itself)
  revealPicked(id) {
    const tree = this.tree();
    if (tree && !this.clicking) tree.showNode(id);
  }

  // matches by name (any part, any case), IFC class (all of it, with or without "Ifc": "door" finds the IfcDoor
  // elements) or GlobalId (from the start); at most MAX_RESULTS listed
  find(query) {
    const text = query.trim().toLowerCase();
    const ifcClass = text.startsWith("ifc") ? text : `ifc${text}`;
    if (!text) {
      this.results.hidden = true;
      this.results.replaceChildren();
      return [];
    }
    const matches = [];
    for (const meta of Object.values(this.view.viewer.metaScene.metaObjects)) {
      if ((meta.name || "").toLowerCase().includes(text) || (meta.type || "").toLowerCase() === ifcClass || meta.id.toLowerCase().startsWith(text)) matches.push(meta);
      if (matches.length > MAX_RESULTS) break;
    }
    this.results.hidden = false;
    replace(this.results,
      h("li", { class: "hint" }, matches.length ? t("{count} matches", { count: matches.length > MAX_RESULTS ? `${MAX_RESULTS}+` : matches.length }) : t("No match.")),
      matches.slice(0, MAX_RESULTS).map((meta) => h("li", {},
        h("button", { type: "button", class: "link", "data-testid": "tree-result", onClick: () => this.reveal(meta.id) },
          meta.name || meta.id, h("small", {}, ` ${meta.type}`)))));
    return matches;
  }

  reveal(id) {
    const tree = this.tree();
    if (tree) tree.showNode(id);
    if (this.view.has(id)) this.view.flyToObject(id);
    else this.view.onPick(this.view.metaObject(id));
  }

  relabel() {
    if (this.search.value) this.find(this.search.value);
    for (const button of this.tabs.children) setText(button, t(HIERARCHIES.find((item) => item.id === button.dataset.hierarchy).label));
  }
}
