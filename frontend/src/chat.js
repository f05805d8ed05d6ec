// The chat panel: the session's event stream (fetch, so the token and Last-Event-ID can be sent; reconnects where
// it left off, also when the stream goes silent without closing: the server sends a comment heartbeat on idle
// streams, so no byte for WATCHDOG seconds means a half-open connection), messages merged by id.
//
// Everything updates by key: a message or part keeps its element across frames (an expanded tool card stays
// expanded, a half-typed answer stays typed), and the list only follows new output while it is scrolled to the
// bottom. A frame that cannot be read or handled is shown in the panel, not swallowed, and so is a session or its
// messages that could not be loaded (the panel says why instead of staying empty).
//
// Without a language model (the session's languageModel is false) the panel says so before anything is sent, with
// how to configure one: the offline chat only answers with that note, or runs the demonstration on a copy.
//
// Writing to the agent, aborting its turn and answering its questions need the edit capability (the agent acts as
// whoever wrote the message): account.js hides those controls without it, and the hint says why.
import FRAMES from "../../chat_app/frames.json"; // the frame names, shared with the gateway (chat_app/frames.py)
import { rightsHint } from "./account.js";
import { t } from "./i18n.js";
import { renderMarkdown } from "./markdown.js";
import { errorText, guarded, h, setText, syncKeyed, toast } from "./ui.js";

const RECONNECT_MS = [500, 1000, 2000, 5000, 10000];
// 3 x the server's default heartbeat (VIEWER_SSE_HEARTBEAT_SECONDS = 15); localStorage can set another
const WATCHDOG_SECONDS = Number(localStorage.getItem("viewerSseWatchdogSeconds")) || 45;
const MAX_FRAME_ERRORS = 20;
const STICK_TO_BOTTOM_PX = 40;

export class EventStream {
  constructor(app, sessionId, { onFrame, onState, onFrameError }) {
    this.app = app;
    this.url = `/api/v1/chat/sessions/${sessionId}/events`;
    this.onFrame = onFrame;
    this.onState = onState;
    this.onFrameError = onFrameError;
    this.lastEventId = null;
    this.closed = false;
    this.attempt = 0;
    this.controller = null;
    this.lastByteAt = Date.now();
    this.watchdog = setInterval(() => this.checkAlive(), 1000);
  }

  start() {
    this.run();
    return this;
  }

  close() {
    this.closed = true;
    clearInterval(this.watchdog);
    if (this.controller) this.controller.abort();
  }

  // a connection that has sent nothing (not even a heartbeat) for too long is dead: drop it and reconnect
  checkAlive() {
    if (this.closed || !this.controller || Date.now() - this.lastByteAt < WATCHDOG_SECONDS * 1000) return;
    this.stalled = true;
    this.controller.abort();
  }

  async run() {
    while (!this.closed) {
      this.controller = new AbortController();
      this.lastByteAt = Date.now();
      this.stalled = false;
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
      const wait = this.stalled ? 0 : RECONNECT_MS[Math.min(this.attempt++, RECONNECT_MS.length - 1)];
      await new Promise((resolve) => setTimeout(resolve, wait));
    }
  }

  async read(reader) {
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      this.lastByteAt = Date.now();
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
    const frame = { event: "message", data: "" }; // the SSE default type of a block without an event line
    for (const line of block.split("\n")) {
      if (!line || line.startsWith(":")) continue; // a comment: the heartbeat
      const colon = line.indexOf(":");
      const name = colon < 0 ? line : line.slice(0, colon);
      const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
      if (name === "id") frame.id = Number(value);
      else if (name === "event") frame.event = value;
      else if (name === "data") frame.data += (frame.data ? "\n" : "") + value;
    }
    if (!frame.data) return;
    if (frame.id !== undefined && !Number.isNaN(frame.id)) this.lastEventId = frame.id;
    let data;
    try {
      data = JSON.parse(frame.data);
    } catch (error) {
      this.onFrameError(frame, error);
      return;
    }
    try {
      this.onFrame(frame.event, data);
    } catch (error) {
      this.onFrameError(frame, error);
    }
  }
}

function pretty(value) {
  if (value === undefined || value === null || value === "") return "";
  return typeof value === "string" ? value : JSON.stringify(value, null, 2);
}

export class ChatPanel {
  constructor(app) {
    this.app = app;
    this.root = document.getElementById("tab-chat");
    this.messages = new Map(); // id -> {info, parts: Map}
    this.questions = new Map(); // interruptId -> question.ask data
    this.drafts = new Map(); // interruptId -> what is typed into its answer, kept when its card is built again (a resync)
    this.subagents = new Map();
    this.frameErrors = [];
    this.status = "idle";
    this.error = null;
    this.stream = null;
    this.scheduled = false;
    this.layout();
  }

  async open(model) {
    const sessions = await this.loading(() => this.app.api.get("/chat/sessions"), "Loading chat sessions failed");
    if (!sessions) return;
    const session = sessions.find((s) => s.modelId === model.id) ||
      (await this.loading(() => this.app.api.post("/chat/sessions", { title: model.name, modelId: model.id }), "Opening the chat failed"));
    if (session) await this.attach(session);
  }

  async openProject(projectId) {
    const session = await this.loading(() => this.app.api.post("/chat/sessions", { projectId }), "Opening the chat failed");
    if (session) await this.attach(session);
  }

  // a request the panel's content depends on: its failure is shown in the panel (and as a toast), not an empty panel
  async loading(action, label) {
    try {
      const result = await action();
      this.loadError.hidden = true;
      return result;
    } catch (error) {
      const text = `${t(label)}: ${errorText(error)}`;
      setText(this.loadError, text);
      this.loadError.hidden = false;
      toast(text, "error");
      return undefined;
    }
  }

  async attach(session) {
    if (this.session && session && this.session.chatSessionId === session.chatSessionId && this.stream) return;
    if (this.stream) this.stream.close();
    this.messages.clear();
    this.questions.clear();
    this.subagents.clear();
    this.frameErrors = [];
    this.error = null;
    this.messageList.replaceChildren();
    this.session = session;
    this.offlineNotice.hidden = !this.session || this.session.languageModel !== false;
    if (!this.session) return;
    // the stream first, so nothing published between the two reads is missed
    this.stream = new EventStream(this.app, this.session.chatSessionId, {
      onFrame: (event, data) => this.frame(event, data),
      onState: (state) => this.app.setStreamState(state),
      onFrameError: (frame, error) => this.frameError(frame, error),
    }).start();
    const messages = (await this.loading(() => this.app.api.get(`/chat/sessions/${this.session.chatSessionId}/messages`), "Loading messages failed")) || [];
    for (const message of messages) this.upsert(message.info, message.parts);
    this.render();
  }

  upsert(info, parts) {
    const entry = this.messages.get(info.id) || { info, parts: new Map() };
    entry.info = { ...entry.info, ...info };
    for (const part of parts || []) entry.parts.set(part.id, part);
    this.messages.set(info.id, entry);
    return entry;
  }

  frame(event, data) {
    switch (event) {
      case FRAMES.SESSION_STATUS:
        this.status = data.status;
        if (data.status === "busy") this.error = null;
        break;
      case FRAMES.MESSAGE:
        this.upsert(data.info, data.parts);
        break;
      case FRAMES.MESSAGE_UPDATED:
        this.upsert(data.info);
        break;
      case FRAMES.MESSAGE_PART_UPDATED: {
        const part = data.part;
        const entry = this.messages.get(part.messageID) || this.upsert({ id: part.messageID, role: "assistant" });
        entry.parts.set(part.id, part);
        if (part.type === "tool" && part.state.status !== "running") {
          for (const [id, question] of this.questions) if (question.tool && question.tool.callID === part.callID) this.questions.delete(id);
        }
        break;
      }
      case FRAMES.MESSAGE_PART_DELTA: {
        const part = this.messages.get(data.messageID)?.parts.get(data.partID);
        if (part) part[data.field] = (part[data.field] || "") + data.delta;
        break;
      }
      case FRAMES.QUESTION_ASK:
        this.questions.set(data.interruptId, data);
        break;
      case FRAMES.SUBAGENT_STATUS:
        this.subagents.set(data.subagentId, data);
        break;
      case FRAMES.SESSION_ERROR:
        this.error = data.error && data.error.data ? data.error.data.message : t("the turn failed");
        break;
      case FRAMES.VIEWER_STAGED:
        this.app.showStagedBadge(data);
        break;
      case FRAMES.VIEWER_COMMITTED:
        this.app.productChanged();
        toast(t("Saved {version}", { version: data.version }));
        break;
      case FRAMES.MODEL_CREATED:
        toast(`${data.title} created`);
        this.app.models.refresh().then(() => { if (!this.app.model) this.app.openModel(data.modelId); });
        break;
      case FRAMES.VIEWER_NOTIFY_FAILED:
        toast(`The viewer could not be notified: ${data.error || ""}`, "error");
        break;
      default:
        return;
    }
    this.scheduleRender();
  }

  frameError(frame, error) {
    this.frameErrors.push({ key: `${frame.id ?? "?"}-${this.frameErrors.length}`, text: t("A frame could not be handled ({event}): {error}", { event: `${frame.event} #${frame.id ?? "?"}`, error: errorText(error) }) });
    this.frameErrors = this.frameErrors.slice(-MAX_FRAME_ERRORS);
    this.scheduleRender();
  }

  scheduleRender() {
    if (this.scheduled) return;
    this.scheduled = true;
    requestAnimationFrame(() => { this.scheduled = false; this.render(); });
  }

  // --- view -----------------------------------------------------------------------------------------------

  layout() {
    this.messageList = h("div", { class: "messages", "data-testid": "messages" });
    this.subagentList = h("div", { class: "subagents" });
    this.questionList = h("div", { class: "questions" });
    this.errorList = h("div", { class: "frame-errors", "data-testid": "frame-errors" });
    this.turnError = h("div", { class: "chat-error", role: "alert", "data-testid": "chat-error", hidden: true });
    this.loadError = h("div", { class: "chat-error", role: "alert", "data-testid": "chat-load-error", hidden: true });
    this.offlineNotice = h("div", { class: "hint offline-notice", role: "note", "data-testid": "chat-offline-notice", hidden: true },
      h("strong", { i18n: "No language model is configured." }), " ",
      h("span", { i18n: "The chat cannot answer questions and changes nothing. An administrator sets llmAPIKey (with llmBaseURL and llmModel) in server_config.json and restarts the gateway; see Operations › Configuration in the documentation." }), " ",
      h("span", { i18n: "Send “demo” to see the agent's tools work on a copy of the model." }));
    this.turnState = h("span", { class: "turn-state", "data-testid": "turn-state" });
    this.abortButton = h("button", { type: "button", onClick: () => this.abort(), "data-testid": "abort", "data-needs": "edit", i18n: "Abort" });
    this.root.replaceChildren(this.offlineNotice, this.loadError, this.messageList, this.subagentList, this.questionList, this.errorList, this.turnError,
      rightsHint("edit", "Your role here may only read: talking to the agent and answering its questions need the editor role in this project.", "chat-read-only"),
      h("form", { class: "composer", onSubmit: (event) => { event.preventDefault(); this.send(event.target); } },
        h("textarea", { name: "text", rows: 2, i18nPlaceholder: "Ask the agent…", "data-testid": "chat-input", "data-needs": "edit" }),
        h("div", { class: "composer-actions" }, this.turnState, this.abortButton, h("button", { "data-testid": "send", "data-needs": "edit", i18n: "Send" }))));
  }

  render() {
    if (!this.session) return;
    const list = this.messageList;
    const atBottom = list.scrollHeight - list.scrollTop - list.clientHeight < STICK_TO_BOTTOM_PX;
    const ordered = [...this.messages.values()].sort((a, b) => (a.info.id < b.info.id ? -1 : 1));
    syncKeyed(list, ordered, (m) => m.info.id, (m) => this.messageElement(m), (element, m) => this.updateMessage(element, m));
    syncKeyed(this.subagentList, [...this.subagents.values()].filter((s) => s.status === "running"), (s) => s.subagentId,
      (s) => h("div", { class: "subagent-card" }), (element, s) => setText(element, `${s.persona}: ${s.task}`));
    syncKeyed(this.questionList, [...this.questions.values()], (q) => q.interruptId, (q) => this.questionElement(q));
    syncKeyed(this.errorList, this.frameErrors, (e) => e.key, (e) => h("div", { class: "frame-error", role: "alert", "data-testid": "frame-error" }, e.text));
    this.turnError.hidden = !this.error;
    setText(this.turnError, this.error || "");
    const busy = this.status === "busy";
    setText(this.turnState, busy ? t("working…") : t("idle"));
    this.turnState.className = `turn-state ${this.status}`;
    this.abortButton.disabled = !busy;
    if (atBottom) list.scrollTop = list.scrollHeight;
  }

  relabel() {
    for (const element of this.messageList.querySelectorAll("[data-stamp]")) delete element.dataset.stamp;
    this.render();
  }

  messageElement({ info }) {
    const element = h("div", { class: `message ${info.role}${info.subagentId ? " subagent" : ""}`, dataset: { testid: `message-${info.role}`, messageId: info.id } });
    if (info.subagentId) element.append(h("small", { class: "who" }, info.agent || t("sub-agent")));
    element.append(h("div", { class: "parts" }), h("div", { class: "message-error", hidden: true }));
    return element;
  }

  updateMessage(element, { info, parts }) {
    const ordered = [...parts.values()].filter((p) => ["text", "reasoning", "tool"].includes(p.type)).sort((a, b) => (a.id < b.id ? -1 : 1));
    syncKeyed(element.querySelector(".parts"), ordered, (p) => p.id, (p) => this.partElement(p), (el, p) => this.updatePart(el, p));
    const errorBox = element.querySelector(".message-error");
    const error = info.error ? (info.error.name === "MessageAbortedError" ? t("Aborted") : info.error.data?.message || info.error.name) : "";
    errorBox.hidden = !error;
    setText(errorBox, error);
  }

  partElement(part) {
    switch (part.type) {
      case "text":
        return h("div", { class: "part text markdown" });
      case "reasoning":
        return h("details", { class: "part reasoning" }, h("summary", { i18n: "Reasoning" }), h("div", { class: "markdown" }));
      default: // tool
        return h("details", { class: "part tool", dataset: { testid: "tool-card", tool: part.tool, callId: part.callID } },
          h("summary", {}, h("span", { class: "tool-name" }, part.tool), h("span", { class: "tool-status" }), h("span", { class: "tool-title" })),
          h("div", { class: "tool-body" },
            h("h5", { i18n: "Input" }), h("pre", { class: "tool-input", "data-testid": "tool-input" }),
            h("h5", { class: "output-label", i18n: "Output" }), h("pre", { class: "tool-output", "data-testid": "tool-output" }),
            h("div", { class: "tool-error", "data-testid": "tool-error" })));
    }
  }

  // redraws a part's content only when it changed; the element (and its open state) stays
  updatePart(element, part) {
    const stamp = part.type === "tool" ? JSON.stringify(part.state) : part.text || "";
    if (element.dataset.stamp === stamp) return;
    element.dataset.stamp = stamp;
    if (part.type === "text") {
      element.innerHTML = renderMarkdown(part.text);
    } else if (part.type === "reasoning") {
      element.querySelector(".markdown").innerHTML = renderMarkdown(part.text);
    } else {
      const state = part.state || {};
      element.className = `part tool ${state.status || ""}`;
      setText(element.querySelector(".tool-status"), state.status || "");
      setText(element.querySelector(".tool-title"), state.title || "");
      setText(element.querySelector(".tool-input"), pretty(state.input));
      const output = pretty(state.output);
      setText(element.querySelector(".tool-output"), output);
      element.querySelector(".tool-output").hidden = !output;
      element.querySelector(".output-label").hidden = !output;
      setText(element.querySelector(".tool-error"), state.error || "");
    }
  }

  // built once per question: what is typed into it survives new frames
  questionElement(question) {
    if (question.kind === "permission") return this.permissionElement(question);
    const answer = (text) => this.answer(question.interruptId, text);
    const text = h("div", { class: "markdown" });
    text.innerHTML = renderMarkdown(question.question);
    return h("div", { class: "question", "data-testid": "question" },
      question.header && h("strong", {}, question.header), text,
      h("div", { class: "options", "data-needs": "edit" }, (question.options || []).map((o) => h("button", { type: "button", "data-testid": "answer-option", title: o.description || "", onClick: () => answer(o.label) }, o.label))),
      h("form", { "data-needs": "edit", onSubmit: (event) => { event.preventDefault(); answer(event.target.elements.custom.value); } },
        this.draftInput(question.interruptId, { name: "custom", i18nPlaceholder: "Or type an answer" }), h("button", { i18n: "Answer" })));
  }

  draftInput(interruptId, attributes) {
    const input = h("input", attributes);
    input.value = this.drafts.get(interruptId) || "";
    input.addEventListener("input", () => this.drafts.set(interruptId, input.value));
    return input;
  }

  // kind "permission": the agent asks to run a tool with these inputs; once / always / reject with a reason
  permissionElement(question) {
    const permission = question.permission || {};
    const reason = this.draftInput(question.interruptId, { name: "reason", i18nPlaceholder: "Reason (optional)", "data-testid": "permission-reason" });
    const answer = (text) => this.answer(question.interruptId, text);
    return h("div", { class: "question permission", "data-testid": "permission-card", role: "alertdialog" },
      h("strong", { i18n: "Permission requested" }),
      h("p", {}, t("The agent wants to run {tool}", { tool: permission.tool || "?" })),
      question.question && h("p", { class: "meta" }, question.question),
      h("pre", { class: "tool-input", "data-testid": "permission-input" }, pretty(permission.input)),
      h("div", { class: "options", "data-needs": "edit" },
        h("button", { type: "button", class: "approve", "data-testid": "permission-once", i18n: "Allow once", onClick: () => answer("once") }),
        h("button", { type: "button", class: "approve", "data-testid": "permission-always", i18n: "Always allow", onClick: () => answer("always") }),
        reason,
        h("button", { type: "button", class: "danger", "data-testid": "permission-reject", i18n: "Reject", onClick: () => answer(`reject: ${reason.value.trim() || "rejected by the user"}`) })));
  }

  async send(form) {
    const text = form.elements.text.value;
    if (!text.trim()) return;
    if (await guarded(() => this.app.api.post(`/chat/sessions/${this.session.chatSessionId}/messages`, { text }), "Sending failed")) form.reset();
  }

  async answer(interruptId, text) {
    if (await guarded(() => this.app.api.post(`/chat/sessions/${this.session.chatSessionId}/answer`, { interruptId, answer: text }), "Answering failed")) {
      this.questions.delete(interruptId);
      this.drafts.delete(interruptId);
      this.render();
    }
  }

  abort() {
    return guarded(() => this.app.api.post(`/chat/sessions/${this.session.chatSessionId}/abort`), "Abort failed");
  }
}
