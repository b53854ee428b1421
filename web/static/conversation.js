// One conversation: its live event stream and its controls.
//
// History comes from the V1 events search; live events from the agent
// server's socket (conversation_url and session_api_key of the V1 record).
// Each (re)connection asks the socket to resend from the last event seen,
// and events are kept by id, so nothing is missed or shown twice. Without
// a socket (sandbox paused, read-only), new events are polled from V1.
import { get, post, del, patch, query, AgentServer } from "/api.js";
import { h, fill, badge, busy, field, errorBox, toast, shortID } from "/dom.js";
import { renderEvent, executionStatusOf, diffBlock } from "/events.js";
import { titleOf } from "/conversations.js";
import { navigate } from "/app.js";

const readOnlyReasons = {
  ERROR: "Its sandbox failed (ERROR): the conversation is read-only. You can read its transcript; messages, resuming and workspace files are unavailable.",
  MISSING: "Its sandbox was deleted or cleaned up (MISSING): the conversation is read-only. You can read its transcript; messages, resuming and workspace files are unavailable.",
};

export async function conversationView(main, [id], signal) {
  const seen = new Set();
  const actions = new Map();
  let lastTimestamp = null;
  let conv = await loadConv(id);
  if (!conv) {
    fill(main, h("h1", {}, "Conversation not found"), h("p", {}, h("a", { href: "/conversations" }, "Back to the conversations")));
    return;
  }
  let agent = null; // AgentServer while the sandbox runs
  let socket = null;
  let execStatus = conv.execution_status;

  const title = h("h1", { id: "title" }, titleOf(conv));
  const status = h("div", { class: "row", id: "status", "aria-live": "polite" });
  const notice = h("div", { id: "notice" });
  const controls = h("div", { class: "row", id: "controls" });
  const list = h("ol", { class: "events", id: "events", "aria-label": "Events" });
  const confirm = h("div", { id: "confirmation" });
  const composer = h("div", { id: "composer" });
  const side = h("aside", { class: "side" });
  const errors = h("div");
  fill(main, h("div", { class: "row spread" }, title, h("a", { href: "/conversations" }, "All conversations")), status, notice, controls, errors,
    h("div", { class: "layout with-side" }, h("section", { "aria-label": "Transcript" }, list, confirm, composer), side));

  const add = (ev) => {
    if (!ev || !ev.id || seen.has(ev.id)) return;
    seen.add(ev.id);
    const s = executionStatusOf(ev);
    if (s) setExec(s);
    if (ev.timestamp && (!lastTimestamp || ev.timestamp > lastTimestamp) && ev.key !== "full_state") lastTimestamp = ev.timestamp;
    const el = renderEvent(ev, actions);
    if (el) {
      const stick = window.innerHeight + window.scrollY >= document.body.scrollHeight - 80;
      list.append(el);
      if (stick) el.scrollIntoView({ block: "nearest" });
    }
    renderConfirm();
  };
  let reloadChanges = null; // set while the workspace panel shows
  const setExec = (s) => {
    if (s === execStatus) return;
    execStatus = s;
    // The agent stopped working: its changes are worth a new look (only
    // over a live socket: reading the workspace of a paused sandbox would
    // resume it).
    if (reloadChanges && socket && socket.readyState === WebSocket.OPEN && s !== "running") reloadChanges();
    renderStatus();
    renderControls();
    renderConfirm();
  };
  const readOnly = () => conv.sandbox_status === "ERROR" || conv.sandbox_status === "MISSING";

  let statusKey = null;
  function renderStatus() {
    const key = [conv.sandbox_status, execStatus, conv.selected_repository, conv.llm_model].join("|");
    if (key === statusKey) return;
    statusKey = key;
    fill(status, badge(conv.sandbox_status, "Sandbox"), execStatus ? badge(execStatus, "Agent") : null,
      conv.selected_repository ? h("span", {}, conv.selected_repository + (conv.selected_branch ? " @ " + conv.selected_branch : "")) : null,
      conv.llm_model ? h("span", { class: "muted" }, conv.llm_model) : null,
      h("a", { href: "/sandboxes#" + conv.sandbox_id, class: "muted" }, "sandbox " + shortID(conv.sandbox_id)));
    fill(notice, readOnly() ? h("p", { class: "notice", id: "read-only" }, readOnlyReasons[conv.sandbox_status]) : null);
  }

  let controlsKey = null;
  // renderControls draws the buttons for the current state (only when it
  // changed, so that focus stays where it is).
  function renderControls(force) {
    const key = [!!agent, execStatus, conv.sandbox_status].join("|");
    if (!force && key === controlsKey) return;
    controlsKey = key;
    const b = (label, idAttr, fn, cls) => {
      const btn = h("button", { type: "button", id: idAttr, class: cls || "" }, label);
      btn.addEventListener("click", () => busy(btn, fn, errors));
      return btn;
    };
    const items = [];
    const running = execStatus === "running";
    if (agent && !readOnly()) {
      if (running) items.push(b("Stop", "stop", async () => { await agent.call("POST", "/api/conversations/" + id + "/pause"); setExec("paused"); }));
      if (execStatus === "paused" || execStatus === "idle" || execStatus === "stuck" || execStatus === "error")
        items.push(b("Resume", "resume", async () => { await agent.call("POST", "/api/conversations/" + id + "/run"); setExec("running"); }));
    }
    if (!agent && conv.sandbox_status === "PAUSED") {
      items.push(b("Resume sandbox", "resume-sandbox", async () => { await post("/api/v1/sandboxes/" + encodeURIComponent(conv.sandbox_id) + "/resume"); await refresh(); }));
    }
    items.push(h("a", { class: "button", id: "download", href: "/api/v1/app-conversations/" + id + "/download", download: "" }, "Download trajectory"));
    items.push(b("Rename", "rename", async () => showRename()));
    items.push(b("Delete", "delete", async () => showDelete(), "danger"));
    fill(controls, items);
  }

  function showRename() {
    const input = h("input", { value: conv.title || "", maxlength: 200, required: true });
    const save = h("button", { type: "submit", class: "primary" }, "Save");
    const form = h("form", { class: "row", onsubmit: (e) => {
      e.preventDefault();
      busy(save, async () => {
        await patch("/api/v1/app-conversations/" + id, { title: input.value.trim() });
        conv.title = input.value.trim();
        fill(title, titleOf(conv));
        renderControls(true);
      }, errors);
    } }, field("new-title", "New title", input), save, h("button", { type: "button", onclick: () => renderControls(true) }, "Cancel"));
    controlsKey = "rename";
    fill(controls, form);
    input.focus();
  }

  function showDelete() {
    const yes = h("button", { type: "button", class: "danger", id: "confirm-delete" }, "Delete conversation");
    yes.addEventListener("click", () => busy(yes, async () => {
      await del("/api/v1/app-conversations/" + id);
      toast("Conversation deleted.");
      navigate("/conversations");
    }, errors));
    controlsKey = "delete";
    fill(controls, h("div", { class: "notice", role: "alert" },
      h("p", {}, "Delete this conversation and its transcript? If it is the last conversation of its sandbox, the sandbox may be removed too."),
      h("div", { class: "row" }, yes, h("button", { type: "button", onclick: () => renderControls(true) }, "Cancel"))));
    yes.focus();
  }

  // renderConfirm offers approve/reject while the agent waits for the
  // user's confirmation of its pending actions.
  let confirmKey = null;
  function renderConfirm() {
    const pending = [...actions.values()].filter((el) => !el.dataset.answered);
    const key = execStatus === "waiting_for_confirmation" && agent ? pending.map((el) => el.dataset.id).join(",") : "";
    if (key === confirmKey) return;
    confirmKey = key;
    if (execStatus !== "waiting_for_confirmation" || !agent) {
      confirm.replaceChildren();
      return;
    }
    const approve = h("button", { type: "button", class: "primary", id: "approve" }, "Approve");
    const reject = h("button", { type: "button", class: "danger", id: "reject" }, "Reject");
    const respond = (accept) => async () => {
      await agent.call("POST", "/api/conversations/" + id + "/events/respond_to_confirmation", accept ? { accept: true } : { accept: false, reason: "Rejected in the web UI." });
      setExec(accept ? "running" : "idle");
    };
    approve.addEventListener("click", () => busy(approve, respond(true), errors));
    reject.addEventListener("click", () => busy(reject, respond(false), errors));
    fill(confirm, h("section", { class: "confirm", role: "alert", "aria-label": "Confirmation" },
      h("p", {}, h("strong", {}, "The agent waits for your confirmation"), " of ", String(pending.length || 1), pending.length === 1 ? " action:" : " actions:"),
      h("ul", {}, pending.map((el) => h("li", {}, el.querySelector("header code")?.textContent || "action", " ", el.querySelector(".command")?.textContent || el.querySelector("header span")?.textContent || ""))),
      h("div", { class: "row" }, approve, reject)));
  }

  function renderComposer() {
    if (readOnly()) {
      composer.replaceChildren();
      return;
    }
    const text = h("textarea", { rows: 3, required: true });
    const send = h("button", { type: "submit", class: "primary", id: "send" }, "Send");
    const out = h("div");
    fill(composer, h("form", { id: "follow-up", onsubmit: (e) => {
      e.preventDefault();
      busy(send, async () => {
        const res = await post("/api/v1/app-conversations/" + id + "/send-message", { role: "user", content: [{ type: "text", text: text.value }], run: true });
        if (res && res.success === false) throw new Error(res.message || "The message was not delivered.");
        text.value = "";
        await refresh();
        if (!socket) pollEvents();
      }, out);
    } }, field("message", "Send a message", text), out, h("div", { class: "row" }, send)));
  }

  async function renderSide() {
    if (readOnly() || !conv.conversation_url) {
      reloadChanges = null;
      fill(side, h("section", {}, h("h2", {}, "Workspace"), h("p", { class: "muted" }, readOnly() ? "Workspace files are unavailable: the conversation is read-only." : "The workspace is available while the sandbox runs.")));
      return;
    }
    const changes = h("div", { id: "changes" });
    const viewer = h("div", { id: "file-view" });
    const pathInput = h("input", { placeholder: "path/in/workspace", autocomplete: "off" });
    const open = async (p) => {
      fill(viewer, h("p", { class: "muted" }, "Loading " + p + "…"));
      try {
        const text = await get("/api/v1/app-conversations/" + id + "/file" + query({ file_path: p }));
        fill(viewer, h("h3", {}, p), h("pre", { class: "file" }, text));
      } catch (err) { fill(viewer, errorBox(err)); }
    };
    const showDiff = async (p) => {
      fill(viewer, h("p", { class: "muted" }, "Loading the diff of " + p + "…"));
      try {
        const d = await get("/api/v1/app-conversations/" + id + "/git/diff" + query({ path: p }));
        fill(viewer, h("h3", {}, p), diffBlock(d.original || "", d.modified || "", "diff of " + p),
          h("button", { type: "button", onclick: () => open(p) }, "View file"));
      } catch (err) { fill(viewer, errorBox(err)); }
    };
    const loadChanges = async () => {
      try {
        const items = await get("/api/v1/app-conversations/" + id + "/git/changes");
        if (!items || !items.length) { fill(changes, h("p", { class: "muted" }, "No changes.")); return; }
        fill(changes, h("ul", { class: "files" }, items.map((c) => h("li", {}, h("span", { class: "badge info" }, c.status), " ",
          h("button", { type: "button", onclick: () => showDiff(c.path) }, c.path)))));
      } catch (err) { fill(changes, h("p", { class: "muted" }, err.message)); }
    };
    const refreshBtn = h("button", { type: "button", id: "refresh-changes" }, "Refresh");
    refreshBtn.addEventListener("click", () => busy(refreshBtn, loadChanges));
    fill(side, h("section", {}, h("div", { class: "row spread" }, h("h2", {}, "Changes"), refreshBtn), changes),
      h("section", {}, h("h2", {}, "Files"),
        h("form", { class: "row", onsubmit: (e) => { e.preventDefault(); if (pathInput.value.trim()) open(pathInput.value.trim()); } },
          h("label", { for: "file-path", class: "sr-only" }, "File path"), pathInput, h("button", { type: "submit" }, "Open")),
        viewer));
    pathInput.id = "file-path";
    reloadChanges = loadChanges;
    await loadChanges();
  }

  // History: every page of the V1 events search.
  async function loadHistory() {
    let page = null;
    do {
      const res = await get("/api/v1/conversation/" + id + "/events/search" + query({ limit: 100, page_id: page }));
      if (signal.aborted) return;
      (res.items || []).forEach(add);
      page = res.next_page_id;
    } while (page);
  }

  // pollEvents reads V1 events newer than the last one seen.
  async function pollEvents() {
    let page = null;
    do {
      const res = await get("/api/v1/conversation/" + id + "/events/search" + query({ limit: 100, page_id: page, timestamp__gte: lastTimestamp }));
      if (signal.aborted) return;
      (res.items || []).forEach(add);
      page = res.next_page_id;
    } while (page);
  }

  let retry = 500;
  function connect() {
    if (signal.aborted || socket || !agent) return;
    const params = lastTimestamp ? { resend_mode: "since", after_timestamp: lastTimestamp } : { resend_mode: "all" };
    const ws = new WebSocket(agent.socketURL(id, params));
    socket = ws;
    ws.onopen = () => { retry = 500; };
    ws.onmessage = (m) => {
      try { add(JSON.parse(m.data)); } catch { /* a frame that is no event */ }
    };
    ws.onclose = () => {
      if (socket === ws) socket = null;
      if (signal.aborted) return;
      // Reconnect (resending from the last event seen) while the
      // conversation's agent server is reachable.
      setTimeout(async () => { await refresh().catch(() => {}); connect(); }, retry);
      retry = Math.min(retry * 2, 10000);
    };
  }

  async function refresh() {
    const c = await loadConv(id);
    if (!c || signal.aborted) return;
    const hadAgent = !!agent;
    conv = c;
    if (c.conversation_url && c.session_api_key) {
      if (!agent || agent.convURL !== c.conversation_url || agent.key !== c.session_api_key) {
        agent = new AgentServer(c.conversation_url, c.session_api_key);
        if (socket) socket.close();
      }
    } else {
      agent = null;
    }
    if (c.execution_status && !socket) execStatus = c.execution_status;
    if (!c.execution_status && !agent) execStatus = null;
    renderStatus();
    renderControls();
    renderConfirm();
    if (hadAgent !== !!agent) {
      renderComposer();
      renderSide();
    }
  }

  agent = conv.conversation_url && conv.session_api_key ? new AgentServer(conv.conversation_url, conv.session_api_key) : null;
  renderStatus();
  renderControls();
  renderComposer();
  renderSide();
  await loadHistory();
  connect();
  // The record (sandbox status, URL) is polled; events are polled only
  // while there is no socket.
  const timer = setInterval(async () => {
    try {
      await refresh();
      if (!socket && !signal.aborted) {
        if (agent) connect();
        else if (!readOnly()) await pollEvents();
      }
      delete main.dataset.pollError;
    } catch (err) {
      // Shown on the next user action; kept here for whoever inspects the page.
      main.dataset.pollError = String(err && err.message ? err.message : err);
    }
  }, 3000);
  signal.addEventListener("abort", () => {
    clearInterval(timer);
    if (socket) socket.close();
    socket = null;
  });
}

async function loadConv(id) {
  const list = await get("/api/v1/app-conversations" + query({ ids: id }));
  return list && list[0];
}
