// One issue in detail, as a BCF tool shows a topic: opening it applies its first viewpoint (an issue pinned from an IDS
// check: its failing elements selected and framed); the large snapshot of the chosen viewpoint; its viewpoints
// (applied with xeokit's BCFViewpointsPlugin: camera, visibility, colours, section planes, selection; the current
// view added as a new one); its fields, editable (title, description, type, priority, assignee, due date, labels,
// stage); its comment thread (add, edit and delete one's own; a comment may refer to a viewpoint, which a click
// applies).
//
// Built once per opened issue and updated by key: a change arriving meanwhile (a comment, a status, a viewpoint)
// never replaces what is being typed in the fields, a comment being edited or the new comment.
//
// Changing the issue (status, fields, viewpoints) and commenting need the review capability: account.js hides those
// controls without it, the hint says why, and the fields are listed as facts instead of the form.
import { rightsHint } from "./account.js";
import { t } from "./i18n.js";
import {
  IDS_LABEL, READ_ONLY_HINT, STATUSES, formatDate, formatTime, isOwn, issueElements, issueSource, labelsFrom, userName,
} from "./issue_fields.js";
import { guarded, h, replace, setText, syncKeyed } from "./ui.js";

const NEW_VIEWPOINT = "new";

// [API name, label, input attributes]; read from and written to the issue by `valueOf` / `changesFrom`
const FIELDS = [
  ["title", "Title", { required: true }],
  ["comment", "Description", { multiline: true }],
  ["topicType", "Type", { required: true, list: "topicType" }],
  ["priority", "Priority", { list: "priority" }],
  ["assignedTo", "Assigned to", { list: "assignedTo" }],
  ["dueDate", "Due date", { type: "date" }],
  ["labels", "Labels", { placeholder: "comma-separated" }],
  ["stage", "Stage", { list: "stage" }],
];

function valueOf(issue, name) {
  if (name === "labels") return (issue.labels || []).join(", ");
  if (name === "dueDate") return formatDate(issue.dueDate);
  return issue[name] || "";
}

function apiValue(name, text) {
  if (name === "labels") return labelsFrom(text);
  if (name === "dueDate") return text ? `${text}T00:00:00Z` : null;
  return name === "comment" ? text : text.trim();
}

function viewpointSummary(viewpoint) {
  const components = viewpoint.components || {};
  const visibility = components.visibility;
  const parts = [t(viewpoint.orthogonal_camera ? "orthogonal" : "perspective")];
  if (visibility && visibility.exceptions.length) {
    parts.push(t(visibility.default_visibility ? "{count} hidden" : "{count} visible", { count: visibility.exceptions.length }));
  }
  if (components.selection && components.selection.length) parts.push(t("{count} selected", { count: components.selection.length }));
  const coloured = (components.coloring || []).reduce((sum, coloring) => sum + coloring.components.length, 0);
  if (coloured) parts.push(t("{count} coloured", { count: coloured }));
  if (viewpoint.clipping_planes.length) parts.push(t("{count} section plane(s)", { count: viewpoint.clipping_planes.length }));
  if (viewpoint.lines.length) parts.push(t("{count} line(s)", { count: viewpoint.lines.length }));
  if (viewpoint.bitmaps.length) parts.push(t("{count} bitmap(s)", { count: viewpoint.bitmaps.length }));
  return parts.join(" · ");
}

export class IssueDetail {
  constructor(panel, root) {
    this.panel = panel;
    this.root = root;
    this.issue = null;
    this.comments = [];
    this.viewpointGuid = null; // the viewpoint whose snapshot is shown large
  }

  get issueId() {
    return this.issue && this.issue.id;
  }

  get app() {
    return this.panel.app;
  }

  url(path = "") {
    return `/models/${this.app.model.id}/issues/${this.issue.id}${path}`;
  }

  // opening an issue applies its first viewpoint, like a BCF tool
  open(issue) {
    if (this.issueId !== issue.id) this.build(issue);
    this.issueChanged(issue);
    if (this.panel.canFlyTo(issue)) this.panel.flyTo(issue);
    this.loadComments();
  }

  close() {
    this.issue = null;
    this.root.replaceChildren();
  }

  build(issue) {
    this.issue = issue;
    this.comments = [];
    this.viewpointGuid = issue.viewpoints.length ? issue.viewpoints[0].guid : null;
    this.dirty = false;
    const lists = this.panel.datalists;
    this.inputs = Object.fromEntries(FIELDS.map(([name, , attributes]) => [name, attributes.multiline
      ? h("textarea", { name, rows: 3, "data-testid": `field-${name}` })
      : h("input", { name, type: attributes.type || "text", required: attributes.required, list: attributes.list && lists[attributes.list].id,
        i18nPlaceholder: attributes.placeholder, "data-testid": `field-${name}` })]));
    this.saveButton = h("button", { "data-testid": "field-save", i18n: "Save changes", disabled: true });
    this.fieldsForm = h("form", { class: "issue-fields-form", "data-testid": "issue-fields-form", "data-needs": "review",
      onInput: () => this.setDirty(true), onSubmit: (event) => { event.preventDefault(); this.saveFields(); } },
      h("div", { class: "field-grid" }, FIELDS.map(([name, label, attributes]) =>
        h("label", { class: `form-field${attributes.multiline ? " wide" : ""}` }, h("span", { i18n: label }), this.inputs[name]))),
      h("div", { class: "toolbar" }, this.saveButton,
        h("button", { type: "button", i18n: "Revert", "data-testid": "field-revert", onClick: () => { this.setDirty(false); this.render(); } })));
    this.status = h("select", { "data-testid": "detail-status", "data-needs": "review", onChange: (event) => this.panel.update(this.issue, { status: event.target.value }, "Changing the status failed") },
      STATUSES.map((s) => h("option", { value: s, i18n: s })));
    this.heading = h("h3", {});
    this.description = h("p", { class: "issue-comment" });
    this.screenshot = h("img", { class: "screenshot-large", alt: "", "data-testid": "issue-screenshot" });
    this.facts = h("table", { class: "issue-fields" });
    this.viewpointList = h("ul", { class: "viewpoint-list", "data-testid": "viewpoint-list" });
    this.commentList = h("ul", { class: "comment-list", "data-testid": "comment-list" });
    this.commentText = h("textarea", { rows: 2, i18nPlaceholder: "Add a comment", "data-testid": "comment-text" });
    this.commentViewpoint = h("select", { "data-testid": "comment-viewpoint-select" });
    this.commentsHint = h("p", { class: "hint", i18n: "No comments yet." });
    replace(this.root,
      h("div", { class: "toolbar" },
        h("button", { type: "button", i18n: "Back to the list", "data-testid": "issue-back", onClick: () => this.panel.showList() }),
        h("button", { type: "button", i18n: "Apply viewpoint", "data-testid": "detail-apply", onClick: () => this.applyShown() }),
        this.status, this.statusText = h("span", { class: "tag status", "data-testid": "detail-status-text", "data-when-lacking": "review" })),
      rightsHint("review", READ_ONLY_HINT, "issue-read-only"),
      h("section", { class: "detail-screenshot", dataset: { section: "screenshot" } }, this.screenshot),
      h("section", { class: "detail-text", dataset: { section: "text" } }, this.heading, this.description),
      h("section", { class: "detail-viewpoints", dataset: { section: "viewpoints" } },
        h("h4", { i18n: "Viewpoints" }), this.viewpointList,
        h("button", { type: "button", "data-testid": "viewpoint-add", "data-needs": "review", i18n: "Save the current view as a viewpoint", hidden: !this.app.view.viewpoint, onClick: () => this.addViewpoint() })),
      h("section", { class: "detail-fields", dataset: { section: "fields" } }, h("h4", { i18n: "Fields" }), this.fieldsForm, this.facts),
      h("section", { class: "detail-comments", dataset: { section: "comments" } },
        h("h4", { i18n: "Comments" }), this.commentList, this.commentsHint,
        h("form", { class: "comment-form", "data-needs": "review", onSubmit: (event) => { event.preventDefault(); this.addComment(); } },
          this.commentText,
          h("div", { class: "toolbar" },
            h("label", {}, h("span", { i18n: "Viewpoint" }), " ", this.commentViewpoint),
            h("button", { "data-testid": "comment-add", i18n: "Comment" })))));
  }

  setDirty(dirty) {
    this.dirty = dirty;
    this.saveButton.disabled = !dirty;
    this.fieldsForm.classList.toggle("dirty-form", dirty);
  }

  // the issue changed (saved here, elsewhere, or reloaded): every part but what is being typed follows
  issueChanged(issue) {
    if (!issue || issue.id !== this.issueId) return;
    this.issue = issue;
    if (!issue.viewpoints.some((viewpoint) => viewpoint.guid === this.viewpointGuid)) this.viewpointGuid = issue.viewpoints.length ? issue.viewpoints[0].guid : null;
    this.render();
  }

  render() {
    const issue = this.issue;
    if (!issue) return;
    setText(this.heading, issue.title);
    setText(this.description, issue.comment);
    this.status.value = issue.status;
    this.statusText.dataset.i18n = issue.status;
    setText(this.statusText, t(issue.status));
    const shown = issue.viewpoints.find((viewpoint) => viewpoint.guid === this.viewpointGuid);
    const image = shown && shown.snapshot ? shown.snapshot.snapshot_url : issue.screenshot ? this.panel.screenshotUrl(issue) : "";
    if (this.screenshot.getAttribute("src") !== image) {
      if (image) this.screenshot.src = image;
      else this.screenshot.removeAttribute("src");
    }
    this.screenshot.alt = issue.title;
    this.screenshot.hidden = !image;
    if (!this.dirty) for (const [name] of FIELDS) this.inputs[name].value = valueOf(issue, name);
    const row = (label, value, attributes = {}) => value ? h("tr", attributes, h("th", { i18n: label }), h("td", {}, value)) : null;
    const elements = issueElements(issue);
    replace(this.facts,
      issue.entityId ? row("Element", `${issue.entityName || ""} ${issue.entityType ? `(${issue.entityType})` : ""} ${issue.entityId}`.trim())
        : row("Elements", elements.length ? t("{count} element(s)", { count: elements.length }) + (issue.entityType ? ` (${issue.entityType})` : "") : t("none (about the view)")),
      row("Source", issueSource(issue) === IDS_LABEL ? t("IDS check of {ids}", { ids: issue.labels.filter((label) => label !== IDS_LABEL).join(", ") }) : ""),
      row("Author", `${issue.author} · ${issue.provenance.source}`),
      row("Created", formatTime(issue.createdAt)),
      row("Modified", issue.modifiedAt && `${formatTime(issue.modifiedAt)} · ${issue.modifiedAuthor}`),
      row("BCF topic", issue.topicGuid),
      // the fields' form is for those who may change them; the others read them here
      FIELDS.filter(([name]) => name !== "title" && name !== "comment")
        .map(([name, label]) => row(label, valueOf(issue, name), { "data-when-lacking": "review", "data-testid": `fact-${name}` })));
    syncKeyed(this.viewpointList, issue.viewpoints, (viewpoint) => viewpoint.guid, (viewpoint) => this.viewpointItem(viewpoint),
      (element, viewpoint) => this.updateViewpointItem(element, viewpoint));
    this.fillCommentViewpoints();
    this.renderComments();
  }

  // --- viewpoints ------------------------------------------------------------------------------------------------

  viewpointName(guid) {
    const index = this.issue.viewpoints.findIndex((viewpoint) => viewpoint.guid === guid);
    return index >= 0 ? t("Viewpoint {n}", { n: index + 1 }) : t("a removed viewpoint");
  }

  viewpointItem(viewpoint) {
    return h("li", { class: "viewpoint", dataset: { testid: "viewpoint-item", guid: viewpoint.guid } });
  }

  updateViewpointItem(element, viewpoint) {
    element.classList.toggle("shown", viewpoint.guid === this.viewpointGuid);
    const text = `${this.viewpointName(viewpoint.guid)}\n${viewpointSummary(viewpoint)}`;
    if (element.dataset.text === text) return;
    element.dataset.text = text;
    replace(element,
      viewpoint.snapshot ? h("img", { class: "thumb", src: viewpoint.snapshot.snapshot_url, alt: "", onClick: () => this.applyViewpoint(viewpoint) })
        : h("span", { class: "thumb none", i18n: "no snapshot" }),
      h("div", {}, h("strong", {}, this.viewpointName(viewpoint.guid)), h("br"), h("small", { class: "meta", "data-testid": "viewpoint-summary" }, viewpointSummary(viewpoint)),
        h("div", { class: "toolbar" },
          h("button", { type: "button", i18n: "Apply", "data-testid": "viewpoint-apply", onClick: () => this.applyViewpoint(viewpoint) }),
          h("button", { type: "button", class: "danger", i18n: "Remove", "data-testid": "viewpoint-remove", "data-needs": "review", onClick: () => this.removeViewpoint(viewpoint) }))));
  }

  applyViewpoint(viewpoint) {
    this.viewpointGuid = viewpoint.guid;
    this.panel.flyTo(this.issue, viewpoint);
    this.render();
  }

  applyShown() {
    const viewpoint = this.issue.viewpoints.find((v) => v.guid === this.viewpointGuid);
    this.panel.flyTo(this.issue, viewpoint);
  }

  // the view as a new viewpoint of the issue (with the canvas as its snapshot); answers the new viewpoint's guid
  async addViewpoint() {
    const view = this.app.view;
    if (!view.viewpoint) return null;
    const viewpoint = { ...view.viewpoint(), guid: crypto.randomUUID(), snapshot: { snapshot_type: "png", snapshot_data: view.snapshotDataURL() } };
    const updated = await this.panel.update(this.issue, { viewpoints: [...this.issue.viewpoints, viewpoint] }, "Saving the viewpoint failed");
    if (!updated) return null;
    this.viewpointGuid = viewpoint.guid;
    this.render();
    return viewpoint.guid;
  }

  async removeViewpoint(viewpoint) {
    if (!window.confirm(t("Remove {name}?", { name: this.viewpointName(viewpoint.guid) }))) return;
    await this.panel.update(this.issue, { viewpoints: this.issue.viewpoints.filter((v) => v.guid !== viewpoint.guid) }, "Removing the viewpoint failed");
  }

  // --- fields --------------------------------------------------------------------------------------------------

  async saveFields() {
    const changes = {};
    for (const [name] of FIELDS) {
      const text = this.inputs[name].value;
      if (text !== valueOf(this.issue, name)) changes[name] = apiValue(name, text);
    }
    if (!Object.keys(changes).length) {
      this.setDirty(false);
      return;
    }
    const updated = await this.panel.update(this.issue, changes, "Saving the issue failed");
    if (!updated) return;
    this.setDirty(false);
    this.render();
  }

  // --- comments ------------------------------------------------------------------------------------------------

  fillCommentViewpoints() {
    const options = [["", t("none")], ...this.issue.viewpoints.map((viewpoint) => [viewpoint.guid, this.viewpointName(viewpoint.guid)]),
      ...(this.app.view.viewpoint ? [[NEW_VIEWPOINT, t("the current view (saved as a new viewpoint)")]] : [])];
    const wanted = options.map((option) => option.join("=")).join("\n");
    if (this.commentViewpoint.dataset.options === wanted) return;
    const chosen = this.commentViewpoint.value;
    this.commentViewpoint.dataset.options = wanted;
    replace(this.commentViewpoint, options.map(([value, label]) => h("option", { value, selected: value === chosen }, label)));
  }

  async loadComments() {
    const issueId = this.issueId;
    const comments = await guarded(() => this.app.api.get(this.url("/comments")), "Loading comments failed");
    if (!comments || issueId !== this.issueId) return;
    this.comments = comments;
    this.renderComments();
  }

  renderComments() {
    syncKeyed(this.commentList, this.comments, (comment) => comment.id, (comment) => h("li", { class: "comment", dataset: { testid: "comment-item", commentId: comment.id } }),
      (element, comment) => this.updateComment(element, comment));
    this.commentsHint.hidden = this.comments.length > 0;
  }

  updateComment(element, comment) {
    if (element.dataset.editing) return; // a comment being edited keeps its text box
    const own = isOwn(comment.author);
    const version = JSON.stringify([comment, own, comment.viewpointGuid && this.viewpointName(comment.viewpointGuid), t("Edit")]);
    if (element.dataset.version === version) return;
    element.dataset.version = version;
    const viewpoint = comment.viewpointGuid && this.issue.viewpoints.find((v) => v.guid === comment.viewpointGuid);
    replace(element,
      h("div", { class: "comment-head" },
        h("strong", { "data-testid": "comment-author" }, comment.author), " · ", h("small", {}, formatTime(comment.date)),
        comment.modifiedDate && h("small", { class: "meta", "data-testid": "comment-edited" }, ` · ${t("edited {date} by {author}", { date: formatTime(comment.modifiedDate), author: comment.modifiedAuthor })}`)),
      h("p", { class: "comment-body", "data-testid": "comment-body" }, comment.text),
      h("div", { class: "toolbar" },
        viewpoint && h("button", { type: "button", class: "link", "data-testid": "comment-viewpoint", onClick: () => this.applyViewpoint(viewpoint) }, `↗ ${this.viewpointName(viewpoint.guid)}`),
        own && h("button", { type: "button", class: "link", i18n: "Edit", "data-testid": "comment-edit", "data-needs": "review", onClick: () => this.editComment(element, comment) }),
        own && h("button", { type: "button", class: "link danger", i18n: "Delete", "data-testid": "comment-delete", "data-needs": "review", onClick: () => this.deleteComment(comment) })));
  }

  editComment(element, comment) {
    element.dataset.editing = "1";
    const text = h("textarea", { rows: 3, "data-testid": "comment-edit-text", value: comment.text });
    const done = () => { delete element.dataset.editing; delete element.dataset.version; this.renderComments(); };
    replace(element, text, h("div", { class: "toolbar" },
      h("button", { type: "button", i18n: "Save", "data-testid": "comment-save", onClick: async () => {
        const author = userName();
        const changed = await guarded(() => this.app.api.patch(this.url(`/comments/${comment.id}`), { text: text.value, ...(author ? { modifiedAuthor: author } : {}) }), "Saving the comment failed");
        if (!changed) return;
        this.replaceComment(changed);
        done();
      } }),
      h("button", { type: "button", i18n: "Cancel", onClick: done })));
    text.focus();
  }

  replaceComment(comment) {
    this.comments = this.comments.map((c) => (c.id === comment.id ? comment : c));
    this.panel.reloadIssue(this.issueId);
  }

  async addComment() {
    const text = this.commentText.value;
    if (!text.trim()) return;
    let viewpointGuid = this.commentViewpoint.value || null;
    if (viewpointGuid === NEW_VIEWPOINT) {
      viewpointGuid = await this.addViewpoint();
      if (!viewpointGuid) return; // saving the view failed (and said so)
    }
    const issueId = this.issueId;
    const author = userName();
    const comment = await guarded(() => this.app.api.post(this.url("/comments"), { text, viewpointGuid, ...(author ? { author } : {}) }), "Adding the comment failed");
    if (!comment || issueId !== this.issueId) return;
    this.commentText.value = "";
    this.commentViewpoint.value = "";
    this.comments = [...this.comments, comment];
    this.renderComments();
    this.panel.reloadIssue(issueId);
  }

  async deleteComment(comment) {
    if (!window.confirm(t("Delete this comment?"))) return;
    if ((await guarded(() => this.app.api.delete(this.url(`/comments/${comment.id}`)), "Deleting the comment failed")) === undefined) return;
    this.comments = this.comments.filter((c) => c.id !== comment.id);
    this.renderComments();
    this.panel.reloadIssue(this.issueId);
  }
}
