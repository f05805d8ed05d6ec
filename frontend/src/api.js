// The gateway API: the bearer token (asked once, kept for the tab), the {code, message, data} envelope, errors.

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

export class Api {
  constructor(askToken) {
    this.askToken = askToken; // () => Promise<string>: shows the token dialog
    this.token = sessionStorage.getItem("viewerApiToken") || "";
  }

  headers(extra = {}) {
    return this.token ? { ...extra, Authorization: `Bearer ${this.token}` } : extra;
  }

  async fetch(path, options = {}, retried = false) {
    const response = await fetch(path, { ...options, headers: this.headers(options.headers) });
    if (response.status === 401 && !retried) {
      this.token = await this.askToken();
      sessionStorage.setItem("viewerApiToken", this.token);
      return this.fetch(path, options, true);
    }
    return response;
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
