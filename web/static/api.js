// The V1 API from the browser: same-origin requests carrying the session
// cookie. Every error is an Error whose message is the server's detail.

export class APIError extends Error {
  constructor(status, detail) {
    super(detail);
    this.status = status;
  }
}

// detailOf turns an error body ({detail: "..."} or {detail: [{loc, msg}]})
// into one line.
export function detailOf(body, status) {
  if (body && typeof body.detail === "string") return body.detail;
  if (body && Array.isArray(body.detail)) {
    return body.detail.map((e) => (e.loc ? e.loc.filter((l) => l !== "body").join(".") + ": " : "") + e.msg).join("; ");
  }
  return "HTTP " + status;
}

// call sends a request to the V1 API (path starts with /api/v1) and
// answers the decoded JSON body (null for an empty one).
export async function call(method, path, body) {
  const init = { method, headers: { Accept: "application/json" }, credentials: "same-origin" };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const res = await fetch(path, init);
  const text = await res.text();
  let data = null;
  if (text) {
    try {
      data = JSON.parse(text);
    } catch {
      data = text;
    }
  }
  if (res.status === 401) {
    location.assign("/login?next=" + encodeURIComponent(location.pathname + location.search));
    throw new APIError(401, "signed out");
  }
  if (!res.ok) throw new APIError(res.status, detailOf(data, res.status));
  return data;
}

export const get = (path) => call("GET", path);
export const post = (path, body) => call("POST", path, body === undefined ? {} : body);
export const del = (path) => call("DELETE", path);
export const patch = (path, body) => call("PATCH", path, body);

// query builds ?a=b&c=d from an object, leaving out empty values.
export function query(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (Array.isArray(v)) v.forEach((x) => q.append(k, x));
    else if (v !== undefined && v !== null && v !== "") q.set(k, v);
  }
  const s = q.toString();
  return s ? "?" + s : "";
}

// AgentServer calls a conversation's agent server directly (its base URL
// and session key come from the V1 conversation record; the agent server
// allows ACS's public origin).
export class AgentServer {
  constructor(conversationURL, key) {
    const i = conversationURL.indexOf("/api/conversations/");
    this.base = i >= 0 ? conversationURL.slice(0, i) : conversationURL;
    this.convURL = conversationURL;
    this.key = key;
  }
  async call(method, path, body) {
    const init = { method, headers: { "X-Session-API-Key": this.key } };
    if (body !== undefined) {
      init.headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    const res = await fetch(this.base + path, init);
    const text = await res.text();
    let data = null;
    try {
      data = text ? JSON.parse(text) : null;
    } catch {
      data = text;
    }
    if (!res.ok) throw new APIError(res.status, detailOf(data, res.status));
    return data;
  }
  // socketURL is the conversation's event socket.
  socketURL(id, params) {
    const q = new URLSearchParams(params);
    q.set("session_api_key", this.key);
    return this.base.replace(/^http/, "ws") + "/sockets/events/" + encodeURIComponent(id) + "?" + q.toString();
  }
}
