// Small DOM helpers.

export function h(tag, attributes = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("on")) element.addEventListener(name.slice(2).toLowerCase(), value);
    else if (name === "class") element.className = value;
    else if (name === "dataset") Object.assign(element.dataset, value);
    else if (name === "value") element.value = value;
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
