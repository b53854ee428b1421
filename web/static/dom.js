// Small DOM helpers: elements are built with h(), never from HTML strings,
// so no server text is ever parsed as markup.

// h builds an element: attrs are attributes, except on* (listeners), text
// (textContent) and class; children are nodes, strings or arrays (null
// and false are skipped).
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on") && typeof v === "function") el.addEventListener(k.slice(2), v);
    else if (k === "text") el.textContent = v;
    else if (k === "class") el.className = v;
    else if (k === "value") el.value = v;
    else if (v === true) el.setAttribute(k, "");
    else el.setAttribute(k, String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(c instanceof Node ? c : String(c));
  }
}

// clear empties an element and fills it with children.
export function fill(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

// fmtTime is a timestamp as local date and time ("" for none).
export function fmtTime(ts) {
  if (!ts) return "";
  const d = new Date(/[zZ]|[+-]\d\d:\d\d$/.test(ts) ? ts : ts + "Z");
  if (isNaN(d)) return ts;
  return d.toLocaleString();
}

// timeEl is a <time> element for a timestamp.
export function timeEl(ts) {
  return h("time", { datetime: ts || "" }, fmtTime(ts));
}

const badgeKinds = {
  RUNNING: "ok", READY: "ok", finished: "ok", idle: "info", running: "ok",
  STARTING: "warn", WORKING: "warn", PAUSED: "warn", paused: "warn", waiting_for_confirmation: "warn", stuck: "warn",
  ERROR: "bad", MISSING: "bad", error: "bad",
};

// badge is a status badge; label names what the status is of.
export function badge(status, label) {
  const s = status || "none";
  return h("span", { class: "badge " + (badgeKinds[s] || "info"), title: label ? label + ": " + s : s },
    label ? h("span", { class: "sr-only" }, label + ": ") : null, s.replaceAll("_", " "));
}

let toastTimer;
// toast shows a short message in the live region.
export function toast(msg) {
  const el = document.getElementById("toast");
  el.textContent = msg;
  el.hidden = false;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => { el.hidden = true; }, 4000);
}

// errorBox is an error's message in an alert.
export function errorBox(err) {
  return h("div", { class: "error", role: "alert" }, err && err.message ? err.message : String(err));
}

// busy disables a button while fn runs, and shows fn's error in target
// (or as a toast).
export async function busy(button, fn, target) {
  if (button) button.disabled = true;
  try {
    if (target) target.replaceChildren();
    return await fn();
  } catch (err) {
    if (err && err.status === 401) return;
    if (target) target.append(errorBox(err));
    else toast(err.message || String(err));
  } finally {
    if (button) button.disabled = false;
  }
}

// field is a labelled input: id, label text, the control, and a hint.
export function field(id, label, control, hint) {
  control.id = id;
  const hintID = hint ? id + "-hint" : null;
  if (hintID) control.setAttribute("aria-describedby", hintID);
  return h("div", { class: "field" }, h("label", { for: id }, label), control, hint ? h("p", { class: "hint", id: hintID }, hint) : null);
}

// shortID is the first 8 characters of an id.
export const shortID = (id) => (id || "").slice(0, 8);
