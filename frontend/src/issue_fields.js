// What the issue list and the issue detail share: statuses, suggested values of the BCF topic fields, dates, the
// user's name (author of issues and comments).

export const STATUSES = ["open", "checking", "resolved"];
// suggestions for the free-text topic fields (BCF leaves their values to the project); values in use are added
export const SUGGESTIONS = {
  topicType: ["Issue", "Clash", "Request", "Remark", "Fault", "Inquiry", "Info", "IDS failure"],
  priority: ["Critical", "High", "Normal", "Low"],
  stage: ["Design", "Tender", "Construction", "Handover"],
  assignedTo: [],
};
export const USER_KEY = "viewerUserName";
export const IDS_LABEL = "IDS"; // the label of the issues pinned from an IDS check (beside the IDS file's name)
export const DEFAULT_AUTHOR = "local-user"; // the API's author when none is given
// beside the issue controls hidden from someone who may not review (account.js)
export const READ_ONLY_HINT = "Your role here may only read: writing issues and comments needs the reviewer role in this project.";

export function formatTime(value) {
  return value ? new Date(value).toLocaleString() : "";
}

export function formatDate(value) {
  return value ? value.slice(0, 10) : "";
}

// who the user says they are (authors of issues and comments); "" = the API's default author
export function userName() {
  return (localStorage.getItem(USER_KEY) || "").trim();
}

export function isOwn(author) {
  return author === (userName() || DEFAULT_AUTHOR);
}

// values for a field's <datalist>: the suggestions plus the values the loaded issues use
export function fieldOptions(issues, field) {
  return [...new Set([...(SUGGESTIONS[field] || []), ...issues.map((issue) => issue[field]).filter(Boolean)])].sort();
}

export function labelsFrom(text) {
  return [...new Set(text.split(",").map((label) => label.trim()).filter(Boolean))];
}

export function overdue(issue) {
  return Boolean(issue.dueDate) && issue.status !== "resolved" && new Date(issue.dueDate) < new Date();
}


// where an issue comes from, as its badge shows it: "IDS" for one pinned from an IDS check, else its provenance
export function issueSource(issue) {
  return (issue.labels || []).includes(IDS_LABEL) ? IDS_LABEL : issue.provenance.source;
}

// the elements an issue is about: its element, or the selection of its first viewpoint
export function issueElements(issue) {
  const selection = issue.viewpoints.length && issue.viewpoints[0].components ? issue.viewpoints[0].components.selection || [] : [];
  return issue.entityId ? [issue.entityId] : selection.map((component) => component.ifc_guid).filter(Boolean);
}
