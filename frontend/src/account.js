// The person using the page: who they are (GET /auth/me), the header menu (API tokens…, Change password…, Sign out),
// going to the sign-in page when the gateway has accounts, and what they may do to the open model
// (GET /auth/capabilities). A control that needs a capability says so (data-needs="edit"); while the body's
// data-lacks names that capability, app.css hides it, so controls drawn later (a re-rendered list) obey too; a
// rightsHint() beside them (data-when-lacking="edit") says why, and shows only then.
import { ApiError, csrfToken } from "./api.js";
import { onLanguageChange, t } from "./i18n.js";
import { errorText, h, replace, toast } from "./ui.js";

export const SCOPED_CAPABILITIES = ["view", "review", "edit", "own", "download"];

// The reason beside controls hidden for lacking `capability`: shown only while the open model lacks it (app.css).
export function rightsHint(capability, text, testid = "rights-hint") {
  return h("p", { class: "hint rights-hint", role: "note", "data-when-lacking": capability, "data-testid": testid, i18n: text });
}

function currentPlace() {
  return window.location.pathname + window.location.search + window.location.hash;
}

function when(value) {
  return value ? new Date(value).toLocaleString() : t("never");
}

function field(label, input) {
  return h("label", { class: "form-field" }, h("span", { i18n: label }), input);
}

function showError(element, error) {
  element.textContent = error ? errorText(error) : "";
  element.hidden = !error;
}

export class Account {
  constructor(app) {
    this.app = app;
    this.me = null;
    this.capabilities = SCOPED_CAPABILITIES;
    this.capabilitiesModel = ""; // the model this.capabilities were read for ("" when none is open)
    this.menu = document.getElementById("account-menu");
    this.tokens = null; // the dialogs, made when first opened
    this.password = null;
    document.getElementById("account-tokens").addEventListener("click", () => this.openDialog("tokens"));
    document.getElementById("account-password").addEventListener("click", () => this.openDialog("password"));
    document.getElementById("sign-out").addEventListener("click", () => this.signOut());
    document.addEventListener("click", (event) => { if (this.menu.open && !this.menu.contains(event.target)) this.menu.open = false; });
    onLanguageChange(() => this.showMenu()); // the role's name
    this.apply();
  }

  // The sign-in page answers 404 where nobody can sign in (no accounts, no single sign-on): the operator's token
  // opens such a gateway. Asked once per page.
  accountsMode() {
    if (!this.probe) {
      this.probe = fetch("/sign-in", { credentials: "same-origin", redirect: "manual" })
        .then((response) => response.ok || response.type === "opaqueredirect")
        .catch(() => false);
    }
    return this.probe;
  }

  // the API answered 401: with accounts, to the sign-in page (and back here after); true when the page is leaving
  async signIn() {
    if (!(await this.accountsMode())) return false;
    this.app.api.forgetToken();
    if (!this.leaving) {
      this.leaving = true;
      window.location.assign(`/sign-in?next=${encodeURIComponent(currentPlace())}`);
    }
    return true;
  }

  async start() {
    try {
      this.me = await this.app.api.get("/auth/me");
    } catch (error) {
      toast(`${t("Who you are could not be read")}: ${errorText(error)}`, "error");
    }
    this.showMenu();
    this.apply();
  }

  showMenu() {
    const me = this.me;
    const person = Boolean(me && (me.via === "session" || me.via === "token"));
    this.menu.hidden = !person;
    if (!person) return;
    document.getElementById("account-name").textContent = me.displayName || me.username;
    document.getElementById("account-role").textContent = t(me.role);
    this.menu.title = `${me.username} (${t(me.role)})`;
    // the password and signing out belong to a session; a token in the tab has neither
    document.getElementById("account-password").hidden = me.via !== "session";
    document.getElementById("sign-out").hidden = me.via !== "session";
  }

  // --- what the open model allows ---------------------------------------------------------------------------

  async modelOpened(modelId) {
    this.capabilities = await this.capabilitiesOf(`model=${encodeURIComponent(modelId)}`);
    this.capabilitiesModel = modelId;
    this.apply();
  }

  modelClosed() {
    this.capabilities = SCOPED_CAPABILITIES;
    this.capabilitiesModel = "";
    this.apply();
  }

  async capabilitiesOf(query) {
    try {
      return (await this.app.api.get(`/auth/capabilities?${query}`)).capabilities || [];
    } catch (error) {
      // a gateway without the route (404) decides everything on the server alone; so does one that fails here
      if (!(error instanceof ApiError && error.status === 404)) toast(`${t("Your rights could not be read")}: ${errorText(error)}`, "error");
      return SCOPED_CAPABILITIES;
    }
  }

  // also when who the user is arrives after the model opened (start()): the capabilities stay the open model's
  apply() {
    const lacks = SCOPED_CAPABILITIES.filter((capability) => !this.capabilities.includes(capability));
    if (this.me && this.me.role === "guest") lacks.push("create"); // no uploads or new projects outside an invitation
    document.body.dataset.lacks = lacks.join(" ");
    document.body.dataset.capabilitiesOf = this.capabilitiesModel; // which model the hidden controls were decided for
  }

  can(capability) {
    return this.capabilities.includes(capability);
  }

  // --- the menu's actions -----------------------------------------------------------------------------------

  openDialog(name) {
    this.menu.open = false;
    if (name === "tokens") (this.tokens ||= new TokensDialog(this.app.api)).open();
    else (this.password ||= new PasswordDialog(this.app.api)).open();
  }

  async signOut() {
    this.menu.open = false;
    try {
      const response = await fetch("/sign-out", { method: "POST", credentials: "same-origin", redirect: "manual", headers: { "X-CSRFToken": csrfToken() } });
      if (!response.ok && response.type !== "opaqueredirect") throw new Error(`HTTP ${response.status}`);
    } catch (error) {
      toast(`${t("Signing out failed")}: ${errorText(error)}`, "error");
      return;
    }
    window.location.assign("/sign-in");
  }
}

// Personal API tokens: the list (never a secret), a new one (its secret shown once, with a copy button), revoking.
class TokensDialog {
  constructor(api) {
    this.api = api;
    this.list = h("tbody", { "data-testid": "token-list" });
    this.name = h("input", { name: "name", required: true, maxlength: 100, "data-testid": "token-name", i18nPlaceholder: "e.g. nightly export" });
    this.scope = h("select", { name: "scope", "data-testid": "token-scope" },
      h("option", { value: "read", i18n: "read only" }), h("option", { value: "write", i18n: "read and write" }));
    this.expires = h("input", { type: "date", name: "expires", "data-testid": "token-expires" });
    this.secret = h("input", { readonly: true, class: "code", "data-testid": "token-secret", "aria-label": "token" });
    this.created = h("div", { class: "token-created", "data-testid": "token-created", hidden: true },
      h("p", { i18n: "Copy the token now: it is not shown again." }),
      h("div", { class: "secret-row" }, this.secret, h("button", { type: "button", "data-testid": "token-copy", i18n: "Copy", onClick: () => this.copy() })));
    this.error = h("p", { class: "error", role: "alert", "data-testid": "token-error", hidden: true });
    this.dialog = h("dialog", { class: "account-dialog", "data-testid": "tokens-dialog", "aria-labelledby": "tokens-title" },
      h("h3", { id: "tokens-title", i18n: "API tokens" }),
      h("p", { class: "hint", i18n: "A token lets a program call the API as you: send it as the header Authorization: Bearer <token>." }),
      h("table", { class: "token-table" },
        h("thead", {}, h("tr", {}, ["Name", "Scope", "Created", "Expires", "Last used", null].map((label) => h("th", { i18n: label || undefined })))),
        this.list),
      h("form", { class: "token-form", onSubmit: (event) => { event.preventDefault(); this.create(); } },
        h("h4", { i18n: "New token" }),
        field("Name", this.name), field("Scope", this.scope), field("Expires on (optional)", this.expires),
        h("button", { type: "submit", "data-testid": "token-create", i18n: "Create token" })),
      this.created, this.error,
      h("form", { method: "dialog", class: "dialog-actions" }, h("button", { "data-testid": "tokens-close", i18n: "Close" })));
    this.dialog.addEventListener("close", () => { this.secret.value = ""; this.created.hidden = true; });
    document.body.append(this.dialog);
  }

  async open() {
    showError(this.error, null);
    this.dialog.showModal();
    await this.load();
  }

  async load() {
    let tokens;
    try {
      tokens = await this.api.get("/auth/tokens");
    } catch (error) {
      showError(this.error, error);
      return;
    }
    replace(this.list, tokens.length ? tokens.map((token) => h("tr", { dataset: { testid: "token-item", tokenId: token.tokenId }, class: token.revoked ? "revoked" : "" },
      h("td", {}, token.name), h("td", { i18n: token.scope }), h("td", {}, when(token.createdAt)), h("td", {}, token.expiresAt ? when(token.expiresAt) : t("never")),
      h("td", {}, when(token.lastUsedAt)),
      h("td", {}, token.revoked ? h("span", { class: "tag", i18n: "revoked" })
        : h("button", { type: "button", class: "link danger", "data-testid": "token-revoke", i18n: "Revoke", onClick: () => this.revoke(token) }))))
      : h("tr", {}, h("td", { colspan: 6, class: "hint", i18n: "No tokens yet." })));
  }

  async create() {
    showError(this.error, null);
    const body = { name: this.name.value.trim(), scope: this.scope.value };
    if (this.expires.value) body.expiresAt = new Date(`${this.expires.value}T23:59:59`).toISOString(); // the end of that day, here
    let made;
    try {
      made = await this.api.post("/auth/tokens", body);
    } catch (error) {
      showError(this.error, error);
      return;
    }
    this.secret.value = made.token;
    this.created.hidden = false;
    this.name.value = "";
    this.expires.value = "";
    this.secret.select();
    await this.load();
  }

  async copy() {
    try {
      await navigator.clipboard.writeText(this.secret.value);
    } catch {
      this.secret.select(); // no clipboard access (plain http on a LAN address): the selection is ready for Ctrl+C
      document.execCommand("copy");
    }
    toast(t("Token copied"));
  }

  async revoke(token) {
    if (!window.confirm(t("Revoke the token {name}? Programs that use it are refused from now on.", { name: token.name }))) return;
    try {
      await this.api.delete(`/auth/tokens/${encodeURIComponent(token.tokenId)}`);
    } catch (error) {
      showError(this.error, error);
      return;
    }
    await this.load();
  }
}

class PasswordDialog {
  constructor(api) {
    this.api = api;
    const input = (name, autocomplete) => h("input", { type: "password", name, autocomplete, required: true, "data-testid": `password-${name}` });
    this.old = input("old", "current-password");
    this.new = input("new", "new-password");
    this.repeat = input("repeat", "new-password");
    this.error = h("p", { class: "error", role: "alert", "data-testid": "password-error", hidden: true });
    this.form = h("form", { class: "password-form", onSubmit: (event) => { event.preventDefault(); this.change(); } },
      field("Current password", this.old), field("New password", this.new), field("New password again", this.repeat),
      this.error,
      h("div", { class: "dialog-actions" },
        h("button", { type: "submit", "data-testid": "password-change", i18n: "Change password" }),
        h("button", { type: "button", "data-testid": "password-cancel", i18n: "Cancel", onClick: () => this.dialog.close() })));
    this.dialog = h("dialog", { class: "account-dialog", "data-testid": "password-dialog", "aria-labelledby": "password-title" },
      h("h3", { id: "password-title", i18n: "Change password" }), this.form);
    document.body.append(this.dialog);
  }

  open() {
    this.form.reset();
    showError(this.error, null);
    this.dialog.showModal();
  }

  async change() {
    if (this.new.value !== this.repeat.value) {
      showError(this.error, new Error(t("The two new passwords differ.")));
      return;
    }
    try {
      await this.api.post("/auth/password", { oldPassword: this.old.value, newPassword: this.new.value });
    } catch (error) {
      showError(this.error, error);
      return;
    }
    this.dialog.close();
    toast(t("Password changed"));
  }
}
