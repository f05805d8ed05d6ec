// The chat panel: the session's event stream (fetch, so the token and Last-Event-ID can be sent; reconnects where
// it left off), messages merged by id, parts rendered as they stream, questions with answer buttons, abort.
import { guarded, h, replace, toast } from "./ui.js";

const RECONNECT_MS = [500, 1000, 2000, 5000, 10000];

export class EventStream {
  constructor(app, sessionId, onFrame, onState) {
    this.app = app;
    this.url = `/api/v1/chat/sessions/${sessionId}/events`;
    this.onFrame = onFrame;
    this.onState = onState;
    this.lastEventId = null;
    this.closed = false;
    this.attempt = 0;
    this.controller = null;
  }

  start() {
    this.run();
    return this;
  }

  close() {
    this.closed = true;
    if (this.controller) this.controller.abort();
  }

  async run() {
    while (!this.closed) {
      this.controller = new AbortController();
      try {
        const headers = this.lastEventId !== null ? { "Last-Event-ID": String(this.lastEventId) } : {};
        const response = await this.app.api.fetch(this.url, { headers, signal: this.controller.signal });
        if (!response.ok) throw new Error(`HTTP ${response.status}`);
        this.attempt = 0;
        this.onState("live");
        await this.read(response.body.getReader());
      } catch (error) {
        if (this.closed) return;
      }
      this.onState("reconnecting");
      await new Promise((resolve) => setTimeout(resolve, RECONNECT_MS[Math.min(this.attempt++, RECONNECT_MS.length - 1)]));
    }
  }

  async read(reader) {
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += decoder.decode(value, { stream: true });
      let end;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        this.parse(block);
      }
    }
  }

  parse(block) {
    const frame = { event: "message", data: "" };
    for (const line of block.split("\n")) {
      if (!line || line.startsWith(":")) continue;
      const colon = line.indexOf(":");
      const name = line.slice(0, colon);
      const value = line.slice(colon + 1).replace(/^ /, "");
      if (name === "id") frame.id = Number(value);
      else if (name === "event") frame.event = value;
      else if (name === "data") frame.data += value;
    }
    if (!frame.data) return;
    if (frame.id !== undefined && !Number.isNaN(frame.id)) this.lastEventId = frame.id;
    this.onFrame(frame.event, JSON.parse(frame.data));
  }
}

export class ChatPanel {
  constructor(app) {
    this.app = app;
    this.root = document.getElementById("tab-chat");
    this.messages = new Map(); // id -> {info, parts: Map}
    this.questions = new Map(); // interruptId -> question.ask data
    this.subagents = new Map();
    this.status = "idle";
    this.error = null;
    this.stream = null;
    this.scheduled = false;
  }

  async open(model) {
    const sessions = (await guarded(() => this.app.api.get("/chat/sessions"), "Loading chat sessions failed")) || [];
    const session = sessions.find((s) => s.modelId === model.id) ||
      (await guarded(() => this.app.api.post("/chat/sessions", { title: model.name, modelId: model.id }), "Opening the chat failed"));
    await this.attach(session);
  }

  async openProject(projectId) {
    await this.attach(await guarded(() => this.app.api.post("/chat/sessions", { projectId }), "Opening the chat failed"));
  }

  async attach(session) {
    if (this.stream) this.stream.close();
    this.messages.clear();
    this.messageList = null;
    this.questions.clear();
    this.subagents.clear();
    this.error = null;
    this.session = session;
    if (!this.session) return;
    this.stream = new EventStream(this.app, this.session.chatSessionId, (event, data) => this.frame(event, data), (state) => this.app.setStreamState(state)).start();
    const messages = (await guarded(() => this.app.api.get(`/chat/sessions/${this.session.chatSessionId}/messages`), "Loading messages failed")) || [];
    for (const message of messages) this.upsert(message.info, message.parts);
    this.render();
  }

  upsert(info, parts) {
    const entry = this.messages.get(info.id) || { info, parts: new Map() };
    entry.info = info;
    for (const part of parts || []) entry.parts.set(part.id, part);
    this.messages.set(info.id, entry);
    return entry;
  }

  frame(event, data) {
    switch (event) {
      case "session.status":
        this.status = data.status;
        if (data.status === "busy") this.error = null;
        break;
      case "message":
        this.upsert(data.info, data.parts);
        break;
      case "message.updated":
        this.upsert(data.info);
        break;
      case "message.part.updated": {
        const entry = this.messages.get(data.part.messageID) || this.upsert({ id: data.part.messageID, role: "assistant" });
        entry.parts.set(data.part.id, data.part);
        if (data.part.type === "tool" && data.part.state.status !== "running") {
          for (const [id, question] of this.questions) if (question.tool && question.tool.callID === data.part.callID) this.questions.delete(id);
        }
        break;
      }
      case "message.part.delta": {
        const part = this.messages.get(data.messageID)?.parts.get(data.partID);
        if (part) part[data.field] = (part[data.field] || "") + data.delta;
        break;
      }
      case "question.ask":
        this.questions.set(data.interruptId, data);
        break;
      case "subagent.status":
        this.subagents.set(data.subagentId, data);
        break;
      case "session.error":
        this.error = data.error && data.error.data ? data.error.data.message : "the turn failed";
        break;
      case "viewer.staged":
        this.app.showStagedBadge(data);
        break;
      case "viewer.committed":
        this.app.productChanged();
        toast(`Saved ${data.version}`);
        break;
      case "model.created":
        toast(`${data.title} created`);
        this.app.models.refresh().then(() => { if (!this.app.model) this.app.openModel(data.modelId); });
        break;
      case "viewer.notify_failed":
        toast(`The viewer could not be notified: ${data.error || ""}`, "error");
        break;
      default:
        return;
    }
    this.scheduleRender();
  }

  scheduleRender() {
    if (this.scheduled) return;
    this.scheduled = true;
    requestAnimationFrame(() => { this.scheduled = false; this.render(); });
  }

  partView(part) {
    switch (part.type) {
      case "text":
        return h("div", { class: "part text" }, part.text);
      case "reasoning":
        return h("details", { class: "part reasoning" }, h("summary", {}, "Reasoning"), part.text);
      case "tool": {
        const state = part.state;
        return h("div", { class: `part tool ${state.status}`, dataset: { testid: "tool-card", tool: part.tool } },
          h("span", { class: "tool-name" }, part.tool), h("span", { class: "tool-status" }, state.status),
          state.title && h("span", { class: "tool-title" }, state.title),
          state.error && h("div", { class: "tool-error" }, state.error));
      }
      default:
        return null;
    }
  }

  questionView(question) {
    const answer = (text) => this.answer(question.interruptId, text);
    return h("div", { class: "question", "data-testid": "question" },
      question.header && h("strong", {}, question.header), h("p", {}, question.question),
      h("div", { class: "options" }, (question.options || []).map((o) => h("button", { "data-testid": "answer-option", title: o.description || "", onClick: () => answer(o.label) }, o.label))),
      h("form", { onSubmit: (event) => { event.preventDefault(); answer(event.target.elements.custom.value); } },
        h("input", { name: "custom", placeholder: "Or type an answer" }), h("button", {}, "Answer")));
  }

  layout() {
    this.messageList = h("div", { class: "messages", "data-testid": "messages" });
    this.extras = h("div", { class: "extras" });
    this.turnState = h("span", { class: "turn-state", "data-testid": "turn-state" });
    this.abortButton = h("button", { type: "button", onClick: () => this.abort(), "data-testid": "abort" }, "Abort");
    replace(this.root, this.messageList, this.extras,
      h("form", { class: "composer", onSubmit: (event) => { event.preventDefault(); this.send(event.target); } },
        h("textarea", { name: "text", rows: 2, placeholder: "Ask the agent…", "data-testid": "chat-input" }),
        h("div", { class: "composer-actions" }, this.turnState, this.abortButton, h("button", { "data-testid": "send" }, "Send"))));
  }

  render() {
    if (!this.session) return;
    if (!this.messageList || !this.root.contains(this.messageList)) this.layout();
    const ordered = [...this.messages.values()].sort((a, b) => (a.info.id < b.info.id ? -1 : 1));
    const busy = this.status === "busy";
    replace(this.messageList, ordered.map(({ info, parts }) =>
      h("div", { class: `message ${info.role}${info.subagentId ? " subagent" : ""}`, dataset: { testid: `message-${info.role}` } },
        info.subagentId && h("small", { class: "who" }, `${info.agent || "sub-agent"}`),
        [...parts.values()].sort((a, b) => (a.id < b.id ? -1 : 1)).map((p) => this.partView(p)),
        info.error && h("div", { class: "message-error" }, info.error.name === "MessageAbortedError" ? "Aborted" : info.error.data?.message))));
    replace(this.extras,
      [...this.subagents.values()].filter((s) => s.status === "running").map((s) => h("div", { class: "subagent-card" }, `${s.persona}: ${s.task}`)),
      [...this.questions.values()].map((q) => this.questionView(q)),
      this.error && h("div", { class: "chat-error", role: "alert", "data-testid": "chat-error" }, this.error));
    this.turnState.textContent = busy ? "working…" : "idle";
    this.turnState.className = `turn-state ${this.status}`;
    this.abortButton.disabled = !busy;
    this.messageList.scrollTop = this.messageList.scrollHeight;
  }

  async send(form) {
    const text = form.elements.text.value;
    if (!text.trim()) return;
    if (await guarded(() => this.app.api.post(`/chat/sessions/${this.session.chatSessionId}/messages`, { text }), "Sending failed")) form.reset();
  }

  async answer(interruptId, text) {
    if (await guarded(() => this.app.api.post(`/chat/sessions/${this.session.chatSessionId}/answer`, { interruptId, answer: text }), "Answering failed")) {
      this.questions.delete(interruptId);
      this.render();
    }
  }

  abort() {
    return guarded(() => this.app.api.post(`/chat/sessions/${this.session.chatSessionId}/abort`), "Abort failed");
  }
}
