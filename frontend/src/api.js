// The gateway API: the bearer token (asked once, kept for the tab), the {code, message, data} envelope, errors.

export class ApiError extends Error {
  constructor(code, message, data, status) {
    super(message);
    this.code = code;
    this.data = data;
    this.status = status;
  }
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

  async call(method, path, { json, form, body, contentType } = {}) {
    const options = { method };
    if (json !== undefined) {
      options.body = JSON.stringify(json);
      options.headers = { "Content-Type": "application/json" };
    } else if (form) {
      options.body = form;
    } else if (body !== undefined) {
      options.body = body;
      options.headers = { "Content-Type": contentType };
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

  get(path) { return this.call("GET", path); }
  post(path, json) { return this.call("POST", path, { json }); }
  put(path, json) { return this.call("PUT", path, { json }); }
  patch(path, json) { return this.call("PATCH", path, { json }); }
  delete(path) { return this.call("DELETE", path); }
  upload(path, form) { return this.call("POST", path, { form }); }
  putBody(path, body, contentType) { return this.call("PUT", path, { body, contentType }); }
}
