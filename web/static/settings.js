// Settings: Application (sandbox grouping), LLM, secrets, API keys, sign out.
import { get, post, del } from "/api.js";
import { h, fill, busy, field, timeEl, toast } from "/dom.js";

// The spec's labels of the sandbox grouping strategies.
export const groupingLabels = [
  ["NO_GROUPING", "No grouping"],
  ["GROUP_BY_NEWEST", "Group by newest"],
  ["LEAST_RECENTLY_USED", "Least recently used"],
  ["FEWEST_CONVERSATIONS", "Fewest conversations"],
  ["ADD_TO_ANY", "Add to any"],
];

const tabs = [["app", "Application"], ["llm", "LLM"], ["secrets", "Secrets"], ["keys", "API keys"], ["account", "Account"]];

export async function settingsView(main, [tab]) {
  tab = tab || "app";
  const body = h("div", { id: "settings-" + tab });
  fill(main, h("h1", {}, "Settings"),
    h("nav", { class: "tabs", "aria-label": "Settings" }, tabs.map(([k, label]) => h("a", { href: "/settings/" + k, "aria-current": k === tab ? "page" : null }, label))),
    body);
  const view = { app: appSettings, llm: llmSettings, secrets: secretsSettings, keys: keySettings, account: accountSettings }[tab];
  if (!view) {
    fill(body, h("p", {}, "No such settings page."));
    return;
  }
  await view(body);
}

function saved(out) {
  fill(out, h("p", { role: "status", id: "saved" }, "Saved."));
  toast("Saved.");
}

async function appSettings(body) {
  const st = await get("/api/v1/settings");
  const grouping = h("select", { name: "sandbox_grouping_strategy" }, groupingLabels.map(([v, label]) => h("option", { value: v, selected: v === st.sandbox_grouping_strategy }, label)));
  const max = h("input", { type: "number", min: 1, max: 1000, value: st.max_conversations_per_sandbox });
  const policy = st.confirmation_policy && st.confirmation_policy.kind;
  const confirmBox = h("input", { type: "checkbox", checked: policy === "AlwaysConfirm" });
  const out = h("div");
  const save = h("button", { type: "submit", class: "primary", id: "save" }, "Save Changes");
  fill(body, h("h2", {}, "Application"), h("form", { onsubmit: (e) => {
    e.preventDefault();
    busy(save, async () => {
      const req = { sandbox_grouping_strategy: grouping.value, max_conversations_per_sandbox: Number(max.value) };
      // Only a change of the box sets the policy (a ConfirmRisky policy set
      // through the API stays).
      if (confirmBox.checked !== (policy === "AlwaysConfirm")) req.confirmation_policy = { kind: confirmBox.checked ? "AlwaysConfirm" : "NeverConfirm" };
      await post("/api/v1/settings", req);
      saved(out);
    }, out);
  } },
  field("grouping", "Sandbox Grouping Strategy", grouping, "Where a new conversation goes when you choose no sandbox. It does not change the installation's sandbox capacity."),
  field("max-per-sandbox", "Most conversations per sandbox", max),
  h("div", { class: "field" }, h("label", { for: "confirm-actions" }, confirmBox, " Ask me to confirm every action before it runs")),
  out, save));
  confirmBox.id = "confirm-actions";
}

async function llmSettings(body) {
  const st = await get("/api/v1/settings");
  const model = h("input", { value: st.llm_model || "", placeholder: "provider/model, e.g. openai/gpt-4o", autocomplete: "off" });
  const base = h("input", { type: "url", value: st.llm_base_url || "", placeholder: "https://… (empty: the provider's default)", autocomplete: "off" });
  const key = h("input", { type: "password", value: "", autocomplete: "new-password", placeholder: st.llm_api_key_set ? "A key is saved; type to replace it" : "No key saved" });
  const clear = h("input", { type: "checkbox" });
  const out = h("div");
  const save = h("button", { type: "submit", class: "primary", id: "save" }, "Save Changes");
  fill(body, h("h2", {}, "LLM"), h("form", { onsubmit: (e) => {
    e.preventDefault();
    busy(save, async () => {
      const req = { llm_model: model.value.trim() || null, llm_base_url: base.value.trim() || null };
      if (key.value) req.llm_api_key = key.value;
      else if (clear.checked) req.llm_api_key = null;
      await post("/api/v1/settings", req);
      key.value = "";
      saved(out);
    }, out);
  } },
  field("llm-model", "Model", model),
  field("llm-base-url", "Base URL", base),
  field("llm-api-key", "API key", key, "Write-only: a saved key is never shown."),
  st.llm_api_key_set ? h("div", { class: "field" }, h("label", { for: "llm-clear-key" }, clear, " Remove the saved key")) : null,
  out, save));
  clear.id = "llm-clear-key";
}

async function secretsSettings(body) {
  const list = h("div", { id: "secret-list" });
  const out = h("div");
  const load = async () => {
    const res = await get("/api/v1/secrets");
    const items = res.secrets || [];
    if (!items.length) { fill(list, h("p", { class: "muted" }, "No stored secrets.")); return; }
    fill(list, h("table", {}, h("thead", {}, h("tr", {}, ["Name", "Description", "Updated", ""].map((t) => h("th", { scope: "col" }, t)))),
      h("tbody", {}, items.map((s) => {
        const b = h("button", { type: "button", class: "danger", "aria-label": "Delete secret " + s.name }, "Delete");
        b.addEventListener("click", () => busy(b, async () => { await del("/api/v1/secrets/" + encodeURIComponent(s.name)); await load(); }, out));
        return h("tr", { "data-name": s.name }, h("td", {}, h("code", {}, s.name)), h("td", {}, s.description || ""), h("td", {}, timeEl(s.updated_at)), h("td", {}, b));
      }))));
  };
  const name = h("input", { required: true, autocomplete: "off", pattern: "[A-Za-z_][A-Za-z0-9_]*" });
  const value = h("input", { type: "password", required: true, autocomplete: "new-password" });
  const desc = h("input", { autocomplete: "off" });
  const add = h("button", { type: "submit", class: "primary" }, "Add secret");
  fill(body, h("h2", {}, "Stored secrets"), h("p", { class: "hint" }, "Given to every conversation you start. Values are write-only."), list,
    h("form", { onsubmit: (e) => {
      e.preventDefault();
      busy(add, async () => {
        const req = { name: name.value.trim(), value: value.value };
        if (desc.value.trim()) req.description = desc.value.trim();
        value.value = "";
        await post("/api/v1/secrets", req);
        name.value = "";
        desc.value = "";
        await load();
      }, out);
    } }, h("h3", {}, "Add a secret"), field("secret-name", "Name", name), field("secret-value", "Value", value), field("secret-description", "Description (optional)", desc), out, add));
  await load();
}

async function keySettings(body) {
  const list = h("div", { id: "key-list" });
  const shown = h("div", { id: "new-key", "aria-live": "polite" });
  const out = h("div");
  const load = async () => {
    const keys = await get("/api/v1/keys");
    if (!keys.length) { fill(list, h("p", { class: "muted" }, "No API keys.")); return; }
    fill(list, h("table", { id: "keys" }, h("thead", {}, h("tr", {}, ["Name", "Prefix", "Created", ""].map((t) => h("th", { scope: "col" }, t)))),
      h("tbody", {}, keys.map((k) => {
        const b = h("button", { type: "button", class: "danger revoke", "aria-label": "Revoke key " + k.name }, "Revoke");
        b.addEventListener("click", () => busy(b, async () => {
          await del("/api/v1/keys/" + encodeURIComponent(k.id));
          if (shown.dataset.id === k.id) { shown.replaceChildren(); delete shown.dataset.id; }
          toast("Key " + k.name + " revoked.");
          await load();
        }, out));
        return h("tr", { "data-id": k.id, "data-name": k.name }, h("td", {}, k.name), h("td", {}, h("code", {}, k.prefix + "…")), h("td", {}, timeEl(k.created_at)), h("td", {}, b));
      }))));
  };
  const name = h("input", { required: true, autocomplete: "off" });
  const create = h("button", { type: "submit", class: "primary", id: "create-key" }, "Create key");
  fill(body, h("h2", {}, "API keys"), h("p", { class: "hint" }, "For scripts and the acs command line. A key is shown once, when it is created; a revoked key stops working at once."), list, shown,
    h("form", { onsubmit: (e) => {
      e.preventDefault();
      busy(create, async () => {
        const k = await post("/api/v1/keys", { name: name.value.trim() });
        name.value = "";
        shown.dataset.id = k.id;
        fill(shown, h("div", { class: "notice" }, h("p", {}, "Key ", h("strong", {}, k.name), " — copy it now, it is shown only once:"), h("p", { class: "secret-once" }, k.key)));
        await load();
      }, out);
    } }, h("h3", {}, "Create a key"), field("key-name", "Name", name), out, create));
  await load();
}

async function accountSettings(body) {
  const me = await get("/api/v1/users/me");
  fill(body, h("h2", {}, "Account"), h("p", {}, "Signed in as ", h("strong", {}, me.name), me.admin ? " (admin)" : ""),
    h("form", { method: "post", action: "/logout" }, h("button", { type: "submit", id: "sign-out" }, "Sign out")));
}

