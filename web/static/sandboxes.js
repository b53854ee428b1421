// Sandboxes: list with status and the conversations attached; create,
// pause, resume, delete.
import { get, post, del, query } from "/api.js";
import { h, fill, badge, timeEl, busy, errorBox, shortID } from "/dom.js";
import { titleOf } from "/conversations.js";

export async function sandboxesView(main, _params, signal) {
  const list = h("div", { class: "table-wrap", id: "sandbox-list", "aria-live": "polite" });
  const errors = h("div");
  const specs = await get("/api/v1/sandbox-specs/search?limit=100").catch(() => ({ items: [] }));
  const spec = h("select", { id: "spec" }, (specs.items || []).map((s) => h("option", { value: s.id }, s.id)));
  const create = h("button", { type: "button", class: "primary", id: "create-sandbox" }, "Create sandbox");
  create.addEventListener("click", () => busy(create, async () => {
    await post("/api/v1/sandboxes" + query({ sandbox_spec_id: spec.value }));
    await load();
  }, errors));
  let confirming = null; // the sandbox id whose deletion awaits confirmation
  let shown = null; // what the table shows, to redraw only on a change

  const load = async () => {
    const [sbs, convs] = await Promise.all([get("/api/v1/sandboxes/search?limit=100"), get("/api/v1/app-conversations/search?limit=100")]);
    if (signal.aborted) return;
    const key = JSON.stringify([sbs.items, (convs.items || []).map((c) => [c.id, c.sandbox_id, c.title]), confirming]);
    if (key === shown) return;
    shown = key;
    const bySandbox = new Map();
    for (const c of convs.items || []) {
      if (!bySandbox.has(c.sandbox_id)) bySandbox.set(c.sandbox_id, []);
      bySandbox.get(c.sandbox_id).push(c);
    }
    const items = sbs.items || [];
    if (!items.length) {
      fill(list, h("p", { class: "muted" }, "No sandboxes. Starting a conversation creates one (or create one to place conversations in explicitly)."));
      return;
    }
    const action = (label, cls, fn) => {
      const b = h("button", { type: "button", class: cls || "" }, label);
      b.addEventListener("click", () => busy(b, fn, errors));
      return b;
    };
    fill(list, h("table", { id: "sandboxes", class: "cards" },
      h("thead", {}, h("tr", {}, ["Sandbox", "Status", "Spec", "Conversations", "Created", "Actions"].map((t) => h("th", { scope: "col" }, t)))),
      h("tbody", {}, items.map((s) => {
        const attached = bySandbox.get(s.id) || [];
        const id = encodeURIComponent(s.id);
        const acts = [];
        if (s.status === "RUNNING" || s.status === "STARTING") acts.push(action("Pause", "pause", async () => { await post("/api/v1/sandboxes/" + id + "/pause"); await load(); }));
        if (s.status === "PAUSED") acts.push(action("Resume", "resume", async () => { await post("/api/v1/sandboxes/" + id + "/resume"); await load(); }));
        acts.push(action("Delete", "danger delete", async () => { confirming = s.id; await load(); }));
        const row = [h("tr", { "data-id": s.id, id: s.id },
          h("td", { "data-label": "Sandbox" }, h("code", { title: s.id }, shortID(s.id))),
          h("td", { "data-label": "Status" }, badge(s.status, "Sandbox")),
          h("td", { "data-label": "Spec" }, s.sandbox_spec_id),
          h("td", { "data-label": "Conversations" }, attached.length ? h("ul", {}, attached.map((c) => h("li", {}, h("a", { href: "/conversations/" + c.id }, titleOf(c))))) : h("span", { class: "muted" }, "none")),
          h("td", { "data-label": "Created" }, timeEl(s.created_at)),
          h("td", {}, h("div", { class: "row" }, acts)))];
        if (confirming === s.id) {
          const yes = action("Delete sandbox", "danger confirm-delete", async () => { await del("/api/v1/sandboxes/" + id); confirming = null; await load(); });
          row.push(h("tr", { class: "confirm-row" }, h("td", { colspan: 6 }, h("div", { class: "notice", role: "alert" },
            h("p", {}, attached.length > 1
              ? "This sandbox is shared by " + attached.length + " conversations. Deleting it deletes its workspace and makes every one of them read-only (MISSING)."
              : attached.length === 1 ? "Deleting this sandbox deletes its workspace and makes its conversation read-only (MISSING)." : "Delete this sandbox and its workspace?"),
            h("div", { class: "row" }, yes, h("button", { type: "button", onclick: () => { confirming = null; load(); } }, "Cancel"))))));
        }
        return row;
      }))));
  };
  fill(main, h("h1", {}, "Sandboxes"),
    h("p", { class: "hint" }, "Pausing or deleting a shared sandbox affects every conversation attached to it."),
    h("div", { class: "row" }, h("label", { for: "spec", class: "sr-only" }, "Sandbox spec"), spec, create), errors, list);
  await load().catch((err) => fill(list, errorBox(err)));
  const timer = setInterval(() => { if (confirming === null) load().catch(() => {}); }, 3000);
  signal.addEventListener("abort", () => clearInterval(timer));
}
