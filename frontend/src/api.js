// The gateway API: who the page calls as (the session's cookies, with the CSRF token on every unsafe call; or a
// bearer token, asked once and kept for the tab), the {code, message, data} envelope, errors.

export class ApiError extends Error {
  constructor(code, message, data, status) {
    super(message);
    this.code = code;
    this.data = data;
    this.status = status;
  }
}

const RETRY_DELAYS_MS = [500, 2000];

// crypto.getRandomValues, not randomUUID: the page may be served over plain http on a LAN address (no secure context)
function idempotencyKey() {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return `web-${Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("")}`;
}

const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

// Django's CSRF token, which its `csrftoken` cookie holds (set when the session was signed in)
export function csrfToken() {
  const cookie = document.cookie.split("; ").find((part) => part.startsWith("csrftoken="));
  return cookie ? decodeURIComponent(cookie.slice("csrftoken=".length)) : "";
}

export class Api {
  // askToken: () => Promise<string> shows the token dialog; signIn: () => Promise<boolean> goes to the sign-in page
  // when the gateway has accounts (true: the page is leaving), else resolves false and the token is asked for
  constructor(askToken, signIn = async () => false) {
    this.askToken = askToken;
    this.signIn = signIn;
    this.token = sessionStorage.getItem("viewerApiToken") || "";
  }

  headers(method, extra = {}) {
    const headers = this.token ? { ...extra, Authorization: `Bearer ${this.token}` } : { ...extra };
    if (!SAFE_METHODS.has(method)) {
      const csrf = csrfToken();
      if (csrf) headers["X-CSRFToken"] = csrf;
    }
    return headers;
  }

  async fetch(path, options = {}, retried = false) {
    const method = (options.method || "GET").toUpperCase();
    const response = await fetch(path, { credentials: "same-origin", ...options, headers: this.headers(method, options.headers) });
    if (response.status === 401 && !retried) {
      if (await this.signIn()) return new Promise(() => {}); // the page goes to the sign-in page: nothing to answer
      this.token = await this.askToken();
      sessionStorage.setItem("viewerApiToken", this.token);
      return this.fetch(path, options, true);
    }
    return response;
  }

  forgetToken() {
    this.token = "";
    sessionStorage.removeItem("viewerApiToken");
  }

  async call(method, path, { json, form, body, contentType, headers = {} } = {}) {
    const options = { method, headers };
    if (json !== undefined) {
      options.body = JSON.stringify(json);
      options.headers = { ...headers, "Content-Type": "application/json" };
    } else if (form) {
      options.body = form;
    } else if (body !== undefined) {
      options.body = body;
      options.headers = { ...headers, "Content-Type": contentType };
    }
    const response = await this.fetch(`/api/v1${path}`, options);
    let answer;
    try {
      answer = await response.json();
    } catch {
      throw new ApiError(50000, `HTTP ${response.status}: the answer is not JSON`, null, response.status);
    }
    if (answer.code !== 0) throw new ApiError(answer.code, answer.message, answer.data, response.status);
    return answer.data;
  }

  // a file answer (no envelope) at a full path; an error answer still comes in the envelope
  async file(path) {
    const response = await this.fetch(path);
    if (!response.ok) {
      const body = await response.json().catch(() => ({ code: 50000, message: `HTTP ${response.status}` }));
      throw new ApiError(body.code, body.message, body.data, response.status);
    }
    return response;
  }

  async blob(path) {
    return (await this.file(`/api/v1${path}`)).blob();
  }

  // A call whose repetition must not repeat its effect (a script save): one Idempotency-Key per user action, sent
  // again on each retry after a network error or an unreachable edit service (50200), so the gateway answers the
  // first attempt's result (and writes its change-log entries once) instead of saving twice.
  async once(method, path, json, { attempts = RETRY_DELAYS_MS.length + 1 } = {}) {
    const headers = { "Idempotency-Key": idempotencyKey() };
    for (let attempt = 0; ; attempt += 1) {
      try {
        return await this.call(method, path, { json, headers });
      } catch (error) {
        const retryable = error instanceof TypeError || (error instanceof ApiError && error.code === 50200);
        if (!retryable || attempt + 1 >= attempts) throw error;
        await new Promise((resolve) => setTimeout(resolve, RETRY_DELAYS_MS[attempt] ?? RETRY_DELAYS_MS.at(-1)));
      }
    }
  }

  get(path) { return this.call("GET", path); }
  post(path, json) { return this.call("POST", path, { json }); }
  put(path, json) { return this.call("PUT", path, { json }); }
  patch(path, json) { return this.call("PATCH", path, { json }); }
  delete(path) { return this.call("DELETE", path); }
  upload(path, form) { return this.call("POST", path, { form }); }
  putBody(path, body, contentType) { return this.call("PUT", path, { body, contentType }); }
}
