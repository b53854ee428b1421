// Rendering of conversation events: messages, actions with their
// observations, errors and state changes.
import { h, fmtTime } from "/dom.js";

const textOf = (content) => (content || []).filter((c) => c && c.type === "text").map((c) => c.text).join("\n");
const imagesOf = (content) => (content || []).filter((c) => c && c.type === "image").flatMap((c) => c.image_urls || []);

// lineDiff is a minimal line diff of a and b (LCS; for long inputs, all of
// a removed then all of b added).
export function lineDiff(a, b) {
  const x = (a || "").split("\n"), y = (b || "").split("\n");
  if (a === null || a === undefined || a === "") return y.map((l) => ["+", l]);
  if (x.length * y.length > 4e6) return [...x.map((l) => ["-", l]), ...y.map((l) => ["+", l])];
  const m = x.length, n = y.length;
  const t = Array.from({ length: m + 1 }, () => new Uint32Array(n + 1));
  for (let i = m - 1; i >= 0; i--) for (let j = n - 1; j >= 0; j--) t[i][j] = x[i] === y[j] ? t[i + 1][j + 1] + 1 : Math.max(t[i + 1][j], t[i][j + 1]);
  const out = [];
  let i = 0, j = 0;
  while (i < m && j < n) {
    if (x[i] === y[j]) { out.push([" ", x[i]]); i++; j++; }
    else if (t[i + 1][j] >= t[i][j + 1]) out.push(["-", x[i++]]);
    else out.push(["+", y[j++]]);
  }
  while (i < m) out.push(["-", x[i++]]);
  while (j < n) out.push(["+", y[j++]]);
  return out;
}

// diffBlock shows a diff of old and new text.
export function diffBlock(oldText, newText, label) {
  return h("pre", { class: "diff", "aria-label": label || "diff" },
    lineDiff(oldText, newText).map(([op, l]) => h("span", { class: op === "+" ? "add" : op === "-" ? "rem" : "" }, op + " " + l + "\n")));
}

function head(ev, who, extra) {
  return h("header", {}, h("strong", {}, who), extra, h("time", { datetime: ev.timestamp }, fmtTime(ev.timestamp)));
}

// actionBody shows what an action does: its command, diff or arguments.
function actionBody(a, ev) {
  if (!a) return null;
  switch (a.kind) {
    case "TerminalAction":
      return h("pre", { class: "command" }, "$ " + (a.command || ""));
    case "FileEditorAction":
    case "PlanningFileEditorAction":
    case "EditAction":
    case "WriteFileAction": {
      const parts = [h("p", {}, h("code", {}, (a.command || "write") + " " + (a.path || a.file_path || "")))];
      if (a.old_str !== undefined && a.old_str !== null) parts.push(diffBlock(a.old_str, a.new_str || ""));
      else if (a.file_text) parts.push(diffBlock("", a.file_text));
      else if (a.content) parts.push(diffBlock("", a.content));
      else if (a.new_str) parts.push(diffBlock("", a.new_str));
      return parts;
    }
    case "FinishAction":
      return h("div", { class: "text" }, a.message || "");
    case "ThinkAction":
      return h("div", { class: "text" }, a.thought || "");
    default: {
      const args = Object.fromEntries(Object.entries(a).filter(([k]) => k !== "kind"));
      if (!Object.keys(args).length && ev.tool_call) return h("pre", {}, ev.tool_call.arguments || "");
      return h("pre", { class: "args" }, JSON.stringify(args, null, 2));
    }
  }
}

// observationBody shows a tool's result.
// With skipDiff (its action shows the edit already), a file edit's diff
// is left out.
export function observationBody(o, skipDiff) {
  if (!o) return null;
  const text = textOf(o.content);
  const parts = [];
  switch (o.kind) {
    case "TerminalObservation":
      parts.push(h("pre", { class: "output" }, text));
      if (o.exit_code !== undefined && o.exit_code !== null) parts.push(h("p", { class: "hint" }, "exit code " + o.exit_code + (o.timeout ? " (timed out)" : "")));
      break;
    case "FileEditorObservation":
    case "PlanningFileEditorObservation":
      if (!skipDiff && ((o.old_content !== undefined && o.old_content !== null) || o.new_content)) {
        parts.push(h("p", { class: "hint" }, text.split("\n")[0]));
        parts.push(diffBlock(o.old_content || "", o.new_content || "", "changes to " + (o.path || "the file")));
      } else parts.push(h("pre", { class: "output" }, text));
      break;
    case "BrowserObservation":
      if (text) parts.push(h("pre", { class: "output" }, text.length > 4000 ? text.slice(0, 4000) + "\n…" : text));
      if (o.screenshot_data) parts.push(h("img", { src: "data:image/png;base64," + o.screenshot_data, alt: "Browser screenshot" }));
      break;
    default:
      if (text) parts.push(h("pre", { class: "output" }, text));
  }
  for (const url of imagesOf(o.content)) parts.push(h("img", { src: url, alt: "Image from the tool" }));
  if (o.is_error) parts.unshift(h("p", { class: "badge bad" }, "error"));
  return parts;
}

// renderEvent is an event's element, or null for one not shown (token
// logs and state updates other than the agent's status). actions maps
// action ids to their elements, so that an observation joins its action.
export function renderEvent(ev, actions) {
  const base = { "data-id": ev.id, "data-kind": ev.kind };
  switch (ev.kind) {
    case "MessageEvent": {
      const m = ev.llm_message || {};
      const user = ev.source === "user";
      return h("li", { ...base, class: "ev " + (user ? "user" : "agent-msg") }, head(ev, user ? "You" : "Agent"),
        h("div", { class: "text" }, textOf(m.content)), imagesOf(m.content).map((u) => h("img", { src: u, alt: "Attached image" })));
    }
    case "ActionEvent": {
      const thought = textOf(ev.thought);
      const el = h("li", { ...base, class: "ev action", "data-tool": ev.tool_name || "" },
        head(ev, "Action", [h("code", {}, ev.tool_name || (ev.action && ev.action.kind) || "tool"), ev.summary ? h("span", {}, ev.summary) : null,
          ev.security_risk && ev.security_risk !== "UNKNOWN" ? h("span", { class: "badge info" }, "risk " + ev.security_risk) : null]),
        thought ? h("div", { class: "text thought" }, thought) : null,
        actionBody(ev.action, ev),
        h("div", { class: "result" }));
      actions.set(ev.id, el);
      return el;
    }
    case "ObservationEvent":
    case "UserRejectObservation":
    case "AgentErrorEvent": {
      let body;
      const action = ev.action_id && actions.get(ev.action_id);
      if (ev.kind === "ObservationEvent") body = h("div", { class: "observation", "data-id": ev.id }, h("p", { class: "hint" }, "Result"), observationBody(ev.observation, action && !!action.querySelector(".diff")));
      else if (ev.kind === "UserRejectObservation") body = h("div", { class: "observation rejected", "data-id": ev.id }, h("p", {}, h("span", { class: "badge warn" }, "rejected"), " ", ev.rejection_reason || ""));
      else body = h("div", { class: "observation error", "data-id": ev.id, role: "note" }, h("p", {}, h("span", { class: "badge bad" }, "agent error"), " ", ev.error || ""));
      if (action) {
        action.querySelector(".result").append(body);
        action.dataset.answered = "true";
        return null;
      }
      // An error or observation without a known action stands alone.
      return h("li", { ...base, class: "ev" + (ev.kind === "ObservationEvent" ? "" : " err") }, head(ev, ev.tool_name || "Tool"), body);
    }
    case "ConversationErrorEvent":
      return h("li", { ...base, class: "ev err", role: "note" }, head(ev, "Error", h("code", {}, ev.code || "")), h("div", { class: "text" }, ev.detail || ""));
    case "PauseEvent":
      return h("li", { ...base, class: "ev state" }, "Paused by the user · ", fmtTime(ev.timestamp));
    case "ConversationStateUpdateEvent":
      if (ev.key === "execution_status") return h("li", { ...base, class: "ev state" }, "Agent status: ", String(ev.value).replaceAll("_", " "), " · ", fmtTime(ev.timestamp));
      return null;
    case "SystemPromptEvent":
      return h("li", { ...base, class: "ev state" }, h("details", {}, h("summary", {}, "System prompt"), h("pre", {}, (ev.system_prompt && ev.system_prompt.text) || "")));
    case "CondensationSummaryEvent":
      return h("li", { ...base, class: "ev state" }, "History condensed: ", ev.summary || "");
    case "Condensation":
    case "CondensationRequest":
      return h("li", { ...base, class: "ev state" }, "History condensed");
    case "TokenEvent":
    case "LLMCompletionLogEvent":
      return null;
    default:
      return h("li", { ...base, class: "ev state" }, ev.kind || "event");
  }
}

// executionStatusOf is the execution status a state event carries, if any.
export function executionStatusOf(ev) {
  if (ev.kind !== "ConversationStateUpdateEvent") return null;
  if (ev.key === "execution_status") return ev.value;
  if (ev.key === "full_state" && ev.value && ev.value.execution_status) return ev.value.execution_status;
  return null;
}
