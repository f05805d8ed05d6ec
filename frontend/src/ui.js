// Small DOM helpers: h() builds elements (attribute `i18n` = English UI text, translated now and on every language
// switch; `i18nTitle`, `i18nPlaceholder` likewise), toasts, errors.
import { t } from "./i18n.js";

export function h(tag, attributes = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("on")) element.addEventListener(name.slice(2).toLowerCase(), value);
    else if (name === "class") element.className = value;
    else if (name === "dataset") Object.assign(element.dataset, value);
    else if (name === "value") element.value = value;
    else if (name === "checked") element.checked = Boolean(value);
    else if (name === "i18n") { element.dataset.i18n = value; element.textContent = t(value); }
    else if (name === "i18nTitle") { element.dataset.i18nTitle = value; element.title = t(value); }
    else if (name === "i18nPlaceholder") { element.dataset.i18nPlaceholder = value; element.placeholder = t(value); }
    else element.setAttribute(name, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    element.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return element;
}

export function replace(container, ...children) {
  container.replaceChildren(...children.flat().filter((c) => c !== null && c !== undefined && c !== false));
}

// Keyed children: makes `container` hold one element per item, in order, reusing the element of each key
// (create(item) makes it, update(element, item) refreshes it in place), so open <details>, focus and typed text
// inside an element survive. Elements that go are removed before any is placed, so one already in order is never
// moved: a moved element loses focus, and whoever was typing in the card below an answered one would lose keys.
export function syncKeyed(container, items, key, create, update) {
  const wanted = new Set(items.map((item) => String(key(item))));
  const existing = new Map();
  for (const child of [...container.children]) {
    if (child.dataset.key === undefined) continue;
    if (wanted.has(child.dataset.key)) existing.set(child.dataset.key, child);
    else child.remove();
  }
  let previous = null;
  for (const item of items) {
    const id = String(key(item));
    let element = existing.get(id);
    if (!element) {
      element = create(item);
      element.dataset.key = id;
    }
    if (update) update(element, item);
    const expected = previous ? previous.nextElementSibling : container.firstElementChild;
    if (expected !== element) container.insertBefore(element, expected);
    previous = element;
  }
}

export function toast(message, kind = "info") {
  const area = document.getElementById("toasts");
  const item = h("div", { class: `toast ${kind}`, role: kind === "error" ? "alert" : "status" }, message);
  area.append(item);
  setTimeout(() => item.remove(), kind === "error" ? 8000 : 4000);
}

export function errorText(error) {
  return error && error.message ? error.message : String(error);
}

export async function guarded(action, label) {
  try {
    return await action();
  } catch (error) {
    toast(`${label}: ${errorText(error)}`, "error");
    return undefined;
  }
}

export function setText(element, text) {
  if (element.textContent !== text) element.textContent = text;
}
