// Conversations: the list (with search) and the new-conversation form with
// the start task's progress.
import { get, post, query } from "/api.js";
import { h, fill, badge, timeEl, busy, field, errorBox, shortID, fmtTime } from "/dom.js";
import { navigate } from "/app.js";

// titleOf is a conversation's title, or its short id.
export const titleOf = (c) => c.title || "Conversation " + shortID(c.id);

// conversationsView lists the user's conversations, newest first.
export async function conversationsView(main, _params, signal, q) {
  const search = h("input", { type: "search", name: "q", value: q.get("q") || "", placeholder: "Title contains…" });
  const list = h("div", { class: "table-wrap", "aria-live": "polite" });
  let shown = null;
  const load = async () => {
    const page = await get("/api/v1/app-conversations/search" + query({ title__contains: search.value.trim(), limit: 100 }));
    if (signal.aborted) return;
    const items = page.items || [];
    const key = JSON.stringify([search.value, items.map((c) => [c.id, c.title, c.sandbox_status, c.execution_status, c.updated_at])]);
    if (key === shown) return;
    shown = key;
    if (!items.length) {
      fill(list, h("p", { class: "muted" }, search.value ? "No conversation matches." : "No conversations yet. ", search.value ? null : h("a", { href: "/conversations/new" }, "Start one.")));
      return;
    }
    fill(list, h("table", { id: "conversations", class: "cards" },
      h("thead", {}, h("tr", {}, ["Conversation", "Sandbox", "Agent", "Repository", "Model", "Updated"].map((t) => h("th", { scope: "col" }, t)))),
      h("tbody", {}, items.map((c) => h("tr", { "data-id": c.id },
        h("td", {}, h("a", { href: "/conversations/" + c.id }, titleOf(c))),
        h("td", { "data-label": "Sandbox" }, badge(c.sandbox_status, "Sandbox")),
        h("td", { "data-label": "Agent" }, c.execution_status ? badge(c.execution_status, "Agent") : h("span", { class: "muted" }, "—")),
        h("td", { "data-label": "Repository" }, c.selected_repository ? c.selected_repository + (c.selected_branch ? " @ " + c.selected_branch : "") : h("span", { class: "muted" }, "—")),
        h("td", { "data-label": "Model" }, c.llm_model || h("span", { class: "muted" }, "default")),
        h("td", { "data-label": "Updated" }, timeEl(c.updated_at)))))));
  };
  const form = h("form", { role: "search", class: "row", onsubmit: (e) => {
    e.preventDefault();
    history.replaceState(null, "", "/conversations" + query({ q: search.value.trim() }));
    busy(null, load, list);
  } }, h("label", { for: "search", class: "sr-only" }, "Search conversations"), search, h("button", { type: "submit" }, "Search"));
  search.id = "search";
  fill(main, h("div", { class: "row spread" }, h("h1", {}, "Conversations"), h("a", { class: "button primary", href: "/conversations/new", id: "new-conversation" }, "New conversation")), form, list);
  await load();
  // Statuses change while the page is open.
  const timer = setInterval(() => { load().catch(() => {}); }, 5000);
  signal.addEventListener("abort", () => clearInterval(timer));
}

// newConversationView is the start form; with ?task=<id> it follows that
// start task.
export async function newConversationView(main, _params, signal, q) {
  const progress = h("section", { id: "start-progress", "aria-live": "polite" });
  const taskID = q.get("task");
  if (taskID) {
    fill(main, h("h1", {}, "Starting a conversation"), progress);
    return followTask(taskID, progress, signal);
  }
  const sandboxes = await get("/api/v1/sandboxes/search?limit=100").catch(() => ({ items: [] }));
  const message = h("textarea", { name: "message", required: true, rows: 5 });
  const repo = h("input", { name: "repository", placeholder: "org/repo", pattern: "[A-Za-z0-9_.\\-]+/[A-Za-z0-9_.\\-]+", autocomplete: "off" });
  const branch = h("input", { name: "branch", placeholder: "main", autocomplete: "off" });
  const sandbox = h("select", { name: "sandbox" },
    h("option", { value: "" }, "Automatic (Settings > Application > Sandbox Grouping Strategy)"),
    (sandboxes.items || []).filter((s) => s.status === "RUNNING").map((s) => h("option", { value: s.id }, "Sandbox " + shortID(s.id) + " (" + s.sandbox_spec_id + ")")));
  const pairs = h("div", { class: "pairs", id: "secret-pairs" });
  let n = 0;
  const addPair = () => {
    n++;
    const name = h("input", { "aria-label": "Secret " + n + " name", placeholder: "NAME", class: "secret-name", autocomplete: "off", pattern: "[A-Za-z_][A-Za-z0-9_]*" });
    const value = h("input", { type: "password", "aria-label": "Secret " + n + " value", placeholder: "value", class: "secret-value", autocomplete: "new-password" });
    const row = h("div", { class: "pair" }, name, value, h("button", { type: "button", "aria-label": "Remove secret " + n, onclick: () => row.remove() }, "Remove"));
    pairs.append(row);
    name.focus();
  };
  const errors = h("div");
  const submit = h("button", { type: "submit", class: "primary", id: "start" }, "Start");
  const form = h("form", { id: "new-conversation-form", onsubmit: (e) => {
    e.preventDefault();
    busy(submit, async () => {
      const body = { initial_message: { role: "user", content: [{ type: "text", text: message.value }], run: true } };
      if (repo.value.trim()) body.selected_repository = repo.value.trim();
      if (branch.value.trim()) body.selected_branch = branch.value.trim();
      if (sandbox.value) body.sandbox_id = sandbox.value;
      const secrets = {};
      for (const row of pairs.querySelectorAll(".pair")) {
        const k = row.querySelector(".secret-name").value.trim();
        if (k) secrets[k] = row.querySelector(".secret-value").value;
      }
      if (Object.keys(secrets).length) body.secrets = secrets;
      // The secret values are sent once and never shown again.
      pairs.replaceChildren();
      const task = await post("/api/v1/app-conversations", body);
      navigate("/conversations/new?task=" + encodeURIComponent(task.id), true);
    }, errors);
  } },
  field("message", "Message", message, "What the agent should do."),
  field("repository", "Repository (optional)", repo, "org/repo on your git provider; the sandbox clones it."),
  field("branch", "Branch (optional)", branch),
  field("sandbox", "Sandbox", sandbox, "An explicit sandbox overrides automatic grouping and adds no isolation."),
  h("fieldset", {}, h("legend", {}, "Secrets for this conversation"),
    h("p", { class: "hint" }, "Name/value pairs given to the agent as environment variables. They are sent once and never shown again."),
    pairs, h("button", { type: "button", id: "add-secret", onclick: addPair }, "Add a secret")),
  errors, h("div", { class: "row" }, submit));
  fill(main, h("h1", {}, "New conversation"), form);
  message.focus();
}

// followTask polls a start task until READY (then opens the conversation)
// or ERROR (then shows its detail): soon, then less often, as a start on a
// running sandbox is READY within tens of milliseconds and a new one takes
// longer. (stream-start would answer each status as it is stored, but
// behind a proxy that buffers responses, as API Gateway does, it shows
// nothing until the end.)
async function followTask(id, out, signal) {
  let delay = 25;
  while (!signal.aborted) {
    let task;
    try {
      const tasks = await get("/api/v1/app-conversations/start-tasks" + query({ ids: id }));
      task = tasks && tasks[0];
    } catch (err) {
      fill(out, errorBox(err));
      return;
    }
    if (signal.aborted) return;
    if (!task) {
      fill(out, errorBox("No start task " + id + "."));
      return;
    }
    renderTask(task, out);
    if (task.status === "READY" && task.app_conversation_id) {
      navigate("/conversations/" + task.app_conversation_id, true);
      return;
    }
    if (task.status === "ERROR") return;
    await new Promise((r) => setTimeout(r, delay));
    delay = delay < 500 ? delay * 2 : Math.min(delay * 1.3, 2000);
  }
}

function renderTask(task, out) {
  const steps = task.steps || [];
  fill(out,
    h("p", {}, "Status: ", badge(task.status, "Start")),
    task.placement ? h("p", { id: "placement" }, "Placement: ", task.placement) : null,
    h("ol", { class: "steps", id: "steps" }, steps.map((s) => h("li", { "data-status": s.status },
      h("strong", {}, s.status), h("time", { datetime: s.started_at }, fmtTime(s.started_at)), s.detail ? h("div", { class: "hint" }, s.detail) : null))),
    task.status === "ERROR" ? h("div", { class: "error", role: "alert", id: "start-error" }, "The start failed: " + (task.detail || "no detail")) : null);
}
