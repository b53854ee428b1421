package agentwire

// SessionKeyHeader carries a sandbox's session key: on every request to its
// agent server, and on the agent server's webhook calls to the control plane.
const SessionKeyHeader = "X-Session-API-Key"

// SessionKeyQuery carries the session key on a WebSocket upgrade, for
// clients that cannot set headers.
const SessionKeyQuery = "session_api_key"
