package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"path"
	"sort"
	"strings"

	"github.com/acs-project/acs/client"
	"github.com/acs-project/acs/events/strictjson"
	"github.com/acs-project/acs/internal/httpjson"
	"github.com/acs-project/acs/internal/pathguard"
	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/v1wire"
)

// The review endpoints read a conversation's workspace through its agent
// server: a paused sandbox is resumed first; a read-only one is refused
// (410 MISSING, 503 ERROR). A bad path is the caller's mistake, a 4xx that
// names it relative to the conversation's workspace; 502 is only for an
// agent server that failed or could not be reached.

// maxFileBytes bounds GET .../file.
const maxFileBytes = 10 << 20

// projectDir is where a conversation's review reads are rooted.
func projectDir(c acs.Conversation) string {
	if c.ProjectDir != "" {
		return c.ProjectDir
	}
	return c.WorkingDir
}

// workspaceDir is the directory review paths must stay in, and are named
// relative to in messages: the conversation's working directory.
func workspaceDir(c acs.Conversation) string {
	if c.WorkingDir != "" {
		return c.WorkingDir
	}
	return projectDir(c)
}

// canonicalWorkspace is the path OpenHands clients name a conversation's
// project directory by.
const canonicalWorkspace = "/workspace/project"

// reviewPath is a review route's path parameter once checked.
type reviewPath struct {
	param string // the query parameter it came from
	abs   string // absolute, as the agent server is asked for it
	rel   string // as messages name it: relative to the workspace ("." for it)
}

// resolvePath resolves a requested path against the project directory and
// refuses (422 at query.param) a path no file can have (pathguard.Check: a
// NUL byte, too long, a name too long) and one that leaves the
// conversation's workspace. No message names the workspace's own location.
func resolvePath(c acs.Conversation, p string, param string, q *httpjson.Query) reviewPath {
	root := projectDir(c)
	if !path.IsAbs(p) {
		p = path.Join(root, p)
	}
	p = path.Clean(p)
	ws := path.Clean(workspaceDir(c))
	// OpenHands clients name the project directory /workspace/project (the
	// web frontend reads /workspace/project/.agents_tmp/PLAN.md): a path
	// below it that is not in the workspace is the same path below the
	// project directory.
	if !pathguard.Within(ws, p) && pathguard.Within(canonicalWorkspace, p) {
		p = path.Join(root, strings.TrimPrefix(p, canonicalWorkspace))
	}
	t := reviewPath{param: param, abs: p, rel: relName(ws, p)}
	switch err := pathguard.Check(p); {
	case err != nil:
		q.Errs = append(q.Errs, strictjson.Error{Loc: []any{"query", param}, Type: "value_error",
			Msg: "Value error, " + invalidPath(t.rel, err.Error())})
	case p != ws && !strings.HasPrefix(p, strings.TrimRight(ws, "/")+"/"):
		q.Errs = append(q.Errs, strictjson.Error{Loc: []any{"query", param}, Type: "value_error",
			Msg: "Value error, the path must stay inside the conversation's workspace"})
	}
	return t
}

// invalidPath words the refusal of a path no file can have: msg is
// pathguard's "Invalid path: <reason>", rel the path as messages name it
// (quoted, and cut short: it may hold anything).
func invalidPath(rel, msg string) string {
	reason, ok := strings.CutPrefix(msg, pathguard.ErrInvalidPath.Error()+": ")
	if !ok {
		return msg
	}
	if len(rel) > 80 {
		rel = rel[:80] + "…"
	}
	return fmt.Sprintf("%s %q: %s", pathguard.ErrInvalidPath.Error(), rel, reason)
}

// relName names p relative to the workspace ws: "." for ws itself, its
// base name when it is not below ws.
func relName(ws, p string) string {
	switch {
	case p == ws:
		return "."
	case strings.HasPrefix(p, strings.TrimRight(ws, "/")+"/"):
		return strings.TrimPrefix(p, strings.TrimRight(ws, "/")+"/")
	}
	return path.Base(p)
}

// readFile: GET /api/v1/app-conversations/{id}/file?file_path=... answers the
// file's content as a JSON string. file_path is required; a missing file is
// 404, a directory or another non-regular file 422, a file over 10 MiB 413
// (refused before it is read).
func (a *API) readFile(w http.ResponseWriter, r *http.Request) {
	c, err := a.ownConversation(r, r.PathValue("conversation_id"))
	if err != nil {
		writeErr(w, err)
		return
	}
	q := httpjson.NewQuery(r)
	var t reviewPath
	if q.Require("file_path") {
		if s := q.String("file_path"); *s == "" {
			q.Errs = append(q.Errs, strictjson.Error{Loc: []any{"query", "file_path"}, Msg: "String should have at least 1 character", Type: "string_too_short"})
		} else {
			t = resolvePath(c, *s, "file_path", q)
		}
	}
	if !q.OK(w) {
		return
	}
	sb, agent, err := a.conv.Live(r.Context(), c)
	if err != nil {
		writeErr(w, err)
		return
	}
	b, err := agent.DownloadAtMost(r.Context(), t.abs, maxFileBytes)
	if errors.Is(err, client.ErrTooLarge) {
		writeFileTooLarge(w, t)
		return
	}
	if err != nil {
		writeReviewErr(w, err, t, c, sb)
		return
	}
	httpjson.WriteJSON(w, http.StatusOK, string(b))
}

// gitChanges: GET /api/v1/app-conversations/{id}/git/changes — the agent
// server's [{status, path}] for the project directory.
func (a *API) gitChanges(w http.ResponseWriter, r *http.Request) {
	c, err := a.ownConversation(r, r.PathValue("conversation_id"))
	if err != nil {
		writeErr(w, err)
		return
	}
	q := httpjson.NewQuery(r)
	t := reviewPath{param: "path", abs: projectDir(c)}
	t.rel = relName(path.Clean(workspaceDir(c)), t.abs)
	if s := q.String("path"); s != nil && *s != "" {
		t = resolvePath(c, *s, "path", q)
	}
	if !q.OK(w) {
		return
	}
	a.proxyReview(w, r, c, t, "/api/git/changes?path="+url.QueryEscape(t.abs))
}

// gitDiff: GET /api/v1/app-conversations/{id}/git/diff?path=FILE —
// {modified, original} of one file.
func (a *API) gitDiff(w http.ResponseWriter, r *http.Request) {
	c, err := a.ownConversation(r, r.PathValue("conversation_id"))
	if err != nil {
		writeErr(w, err)
		return
	}
	q := httpjson.NewQuery(r)
	s := q.String("path")
	var t reviewPath
	if s == nil || *s == "" {
		q.Errs = append(q.Errs, strictjson.Error{Loc: []any{"query", "path"}, Msg: "Field required", Type: "missing"})
	} else {
		t = resolvePath(c, *s, "path", q)
	}
	if !q.OK(w) {
		return
	}
	a.proxyReview(w, r, c, t, "/api/git/diff?path="+url.QueryEscape(t.abs))
}

// proxyReview GETs p from the conversation's agent server and passes its
// JSON on; a failure is answered by writeReviewErr.
func (a *API) proxyReview(w http.ResponseWriter, r *http.Request, c acs.Conversation, t reviewPath, p string) {
	sb, agent, err := a.conv.Live(r.Context(), c)
	if err != nil {
		writeErr(w, err)
		return
	}
	raw, err := agent.Raw(r.Context(), http.MethodGet, p, nil)
	if err != nil {
		writeReviewErr(w, err, t, c, sb)
		return
	}
	httpjson.WriteRaw(w, http.StatusOK, raw)
}

// writeFileTooLarge answers a file that readFile refuses to read (over
// maxFileBytes).
func writeFileTooLarge(w http.ResponseWriter, t reviewPath) {
	writeErr(w, acs.Errorf(acs.ETOOLARGE,
		"%s: file larger than %d bytes (10 MiB, the most this route reads); download it from the agent server instead", t.rel, maxFileBytes))
}

// writeReviewErr answers a review route whose agent-server call about t
// failed. The agent server's refusals of the path are the caller's
// mistakes and stay 4xx, named by t.rel: 404 (missing file) as 404; 403
// (outside the workspace, through a symbolic link), 400 (a directory, a
// FIFO or another non-regular file, an unreadable file) and 422 (a path no
// file can have) as 422 at query.<param>; 413 and 409 as themselves. Any
// other answer (401, 5xx) is the agent server's failure, 502, and so is a
// server that cannot be reached. Host paths of the workspace are scrubbed
// from every detail passed on.
func writeReviewErr(w http.ResponseWriter, err error, t reviewPath, c acs.Conversation, sb acs.Sandbox) {
	var he *client.HTTPError
	if !errors.As(err, &he) {
		writeAgentErr(w, err)
		return
	}
	detail := scrubPaths(he.Detail, workspaceDir(c), sb.WorkingDir)
	invalid := func(msg string) {
		httpjson.WriteValidation(w, strictjson.Errors{{Loc: []any{"query", t.param}, Msg: "Value error, " + msg, Type: "value_error"}})
	}
	switch he.Status {
	case http.StatusNotFound:
		writeErr(w, acs.Errorf(acs.ENOTFOUND, "File not found: %s", t.rel))
	case http.StatusForbidden:
		invalid(t.rel + " leads outside the conversation's workspace")
	case http.StatusUnprocessableEntity:
		msg := detail
		var items []struct {
			Msg string `json:"msg"`
		}
		if json.Unmarshal([]byte(he.Detail), &items) == nil && len(items) > 0 {
			msg = strings.TrimPrefix(scrubPaths(items[0].Msg, workspaceDir(c), sb.WorkingDir), "Value error, ")
		}
		invalid(invalidPath(t.rel, msg))
	case http.StatusBadRequest:
		switch {
		case strings.HasPrefix(detail, "Path is a directory"):
			invalid("Path is a directory: " + t.rel)
		case strings.HasPrefix(detail, "Not a regular file"):
			invalid("Not a regular file: " + t.rel)
		default:
			invalid("Cannot read " + t.rel + ": " + detail)
		}
	case http.StatusRequestEntityTooLarge:
		reason := detail
		if i := strings.LastIndex(reason, ": "); i >= 0 {
			reason = reason[i+2:]
		}
		writeErr(w, &acs.Error{Code: acs.ETOOLARGE, Message: t.rel + ": " + reason})
	case http.StatusConflict:
		writeErr(w, &acs.Error{Code: acs.ECONFLICT, Message: detail})
	default:
		slog.Warn("api: agent server failed a review read", "status", he.Status, "detail", he.Detail)
		writeErr(w, acs.Errorf(acs.EUPSTREAM, "Agent server error: %d: %s", he.Status, detail))
	}
}

// scrubPaths replaces each of dirs (absolute host paths) in msg with the
// path relative to it ("." for the directory itself), so that no host
// location reaches the caller. The longest directory is replaced first.
func scrubPaths(msg string, dirs ...string) string {
	var ds []string
	for _, d := range dirs {
		if d = path.Clean(d); d != "" && d != "/" && d != "." && path.IsAbs(d) {
			ds = append(ds, d)
		}
	}
	sort.Slice(ds, func(i, j int) bool { return len(ds[i]) > len(ds[j]) })
	for _, d := range ds {
		msg = strings.ReplaceAll(msg, d+"/", "")
		msg = strings.ReplaceAll(msg, d, ".")
	}
	return msg
}

// listSkills: GET /api/v1/app-conversations/{id}/skills — the skills the
// agent server loads for the project directory.
func (a *API) listSkills(w http.ResponseWriter, r *http.Request) {
	var resp v1wire.SkillList
	if !a.postProject(w, r, "/api/skills", &resp) {
		return
	}
	if resp.Skills == nil {
		resp.Skills = []v1wire.Skill{}
	}
	for i := range resp.Skills {
		if resp.Skills[i].Triggers == nil {
			resp.Skills[i].Triggers = []string{}
		}
	}
	httpjson.WriteJSON(w, http.StatusOK, resp)
}

// listHooks: GET /api/v1/app-conversations/{id}/hooks — the project's
// .openhands/hooks.json, by event type in the reference's order.
func (a *API) listHooks(w http.ResponseWriter, r *http.Request) {
	var resp struct {
		HookConfig map[string]json.RawMessage `json:"hook_config"`
	}
	if !a.postProject(w, r, "/api/hooks", &resp) {
		return
	}
	out := v1wire.HookList{Hooks: []v1wire.HookEvent{}}
	for _, ev := range []string{"pre_tool_use", "post_tool_use", "user_prompt_submit", "session_start", "session_end", "stop"} {
		if m, ok := resp.HookConfig[ev]; ok && len(m) > 0 && string(m) != "null" && string(m) != "[]" {
			out.Hooks = append(out.Hooks, v1wire.HookEvent{EventType: ev, Matchers: m})
		}
	}
	httpjson.WriteJSON(w, http.StatusOK, out)
}

// postProject POSTs {"project_dir"} of the path's conversation to its agent
// server (resuming a paused sandbox) and decodes the answer into out. On
// failure it writes the error and returns false.
func (a *API) postProject(w http.ResponseWriter, r *http.Request, path string, out any) bool {
	c, err := a.ownConversation(r, r.PathValue("conversation_id"))
	if err != nil {
		writeErr(w, err)
		return false
	}
	_, agent, err := a.conv.Live(r.Context(), c)
	if err != nil {
		writeErr(w, err)
		return false
	}
	if err := agent.Post(r.Context(), path, map[string]any{"project_dir": projectDir(c)}, out); err != nil {
		writeAgentErr(w, err)
		return false
	}
	return true
}
