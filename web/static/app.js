// ACS web UI: a small router over the views. Links to paths of the UI are
// followed without reloading; each view gets an AbortSignal that ends its
// polling and sockets when the user leaves it.
import { get } from "/api.js";
import { h, fill, errorBox } from "/dom.js";
import { conversationsView, newConversationView } from "/conversations.js";
import { conversationView } from "/conversation.js";
import { sandboxesView } from "/sandboxes.js";
import { settingsView } from "/settings.js";

const routes = [
  [/^\/(conversations\/?)?$/, "conversations", conversationsView],
  [/^\/conversations\/new\/?$/, "conversations", newConversationView],
  [/^\/conversations\/([^/]+)\/?$/, "conversations", conversationView],
  [/^\/sandboxes\/?$/, "sandboxes", sandboxesView],
  [/^\/settings(?:\/([a-z-]+))?\/?$/, "settings", settingsView],
];

let current = null;
export let me = null;

// navigate shows path (pushing it onto the history unless replace).
export function navigate(path, replace) {
  if (replace) history.replaceState(null, "", path);
  else history.pushState(null, "", path);
  render();
}

async function render() {
  if (current) current.abort();
  const ctl = new AbortController();
  current = ctl;
  const main = document.getElementById("main");
  const path = location.pathname;
  for (const [re, nav, view] of routes) {
    const m = path.match(re);
    if (!m) continue;
    for (const a of document.querySelectorAll("[data-nav]")) {
      if (a.dataset.nav === nav) a.setAttribute("aria-current", "page");
      else a.removeAttribute("aria-current");
    }
    fill(main, h("p", { class: "muted" }, "Loading…"));
    try {
      await view(main, m.slice(1), ctl.signal, new URLSearchParams(location.search));
    } catch (err) {
      if (!ctl.signal.aborted && err.status !== 401) fill(main, h("h1", {}, "Something went wrong"), errorBox(err));
    }
    return;
  }
  fill(main, h("h1", {}, "Not found"), h("p", {}, "No page here. ", h("a", { href: "/conversations" }, "See your conversations.")));
}

// Same-origin links to UI pages stay in the page.
document.addEventListener("click", (e) => {
  const a = e.target.closest("a[href]");
  if (!a || e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
  if (a.target || a.hasAttribute("download")) return;
  const url = new URL(a.href, location.href);
  if (url.origin !== location.origin || /^\/(api|sockets|login|logout)(\/|$)/.test(url.pathname)) return;
  e.preventDefault();
  navigate(url.pathname + url.search);
  document.getElementById("main").focus();
});
window.addEventListener("popstate", render);

async function start() {
  try {
    me = await get("/api/v1/users/me");
    fill(document.getElementById("who"), "signed in as ", h("strong", {}, me.name));
  } catch {
    // the API answered 401: api.js goes to the sign-in page
    return;
  }
  render();
}
start();
