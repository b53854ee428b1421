package api

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"path"
	"strings"

	"github.com/acs-project/acs/events/strictjson"
	"github.com/acs-project/acs/sandbox/wire"
	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/agentclient"
)

// The review endpoints read a conversation's workspace through its agent
// server: a paused sandbox is resumed first; a read-only one is refused
// (410 MISSING, 503 ERROR).

// maxFileBytes bounds GET .../file.
const maxFileBytes = 10 << 20

// projectDir is where a conversation's review reads are rooted.
func projectDir(c acs.Conversation) string {
	if c.ProjectDir != "" {
		return c.ProjectDir
	}
	return c.WorkingDir
}

// resolvePath resolves a requested path against the project directory and
// refuses escapes (422).
func resolvePath(c acs.Conversation, p string, param string, q *wire.Query) string {
	root := projectDir(c)
	if !path.IsAbs(p) {
		p = path.Join(root, p)
	}
	p = path.Clean(p)
	ws := c.WorkingDir
	if ws == "" {
		ws = root
	}
	if p != ws && !strings.HasPrefix(p, strings.TrimRight(ws, "/")+"/") {
		q.Errs = append(q.Errs, strictjson.Error{Loc: []any{"query", param}, Type: "value_error",
			Msg: "the path must be inside the conversation's workspace " + ws})
	}
	return p
}

// readFile: GET /api/v1/app-conversations/{id}/file?file_path=... answers the
// file's content as a JSON string ("" when the file does not exist, as the
// reference does). The default is the planning agent's PLAN.md.
func (a *API) readFile(w http.ResponseWriter, r *http.Request) {
	c, err := a.ownConversation(r, r.PathValue("conversation_id"))
	if err != nil {
		writeErr(w, err)
		return
	}
	q := wire.NewQuery(r)
	p := path.Join(projectDir(c), ".agents_tmp", "PLAN.md")
	if s := q.String("file_path"); s != nil {
		if *s == "" {
			q.Errs = append(q.Errs, strictjson.Error{Loc: []any{"query", "file_path"}, Msg: "String should have at least 1 character", Type: "string_too_short"})
		} else {
			p = resolvePath(c, *s, "file_path", q)
		}
	}
	if !q.OK(w) {
		return
	}
	_, client, err := a.liveConversation(r.Context(), c)
	if err != nil {
		writeErr(w, err)
		return
	}
	b, err := client.Download(r.Context(), p, maxFileBytes)
	var he *agentclient.HTTPError
	switch {
	case errors.As(err, &he) && (he.Status == http.StatusNotFound || he.Status == http.StatusBadRequest):
		wire.WriteJSON(w, http.StatusOK, "")
	case errors.Is(err, agentclient.ErrTooLarge):
		wire.WriteDetail(w, http.StatusRequestEntityTooLarge, "The file is larger than 10 MiB; download it from the agent server instead")
	case err != nil:
		writeAgentErr(w, err)
	default:
		wire.WriteJSON(w, http.StatusOK, string(b))
	}
}

// gitChanges: GET /api/v1/app-conversations/{id}/git/changes — the agent
// server's [{status, path}] for the project directory.
func (a *API) gitChanges(w http.ResponseWriter, r *http.Request) {
	c, err := a.ownConversation(r, r.PathValue("conversation_id"))
	if err != nil {
		writeErr(w, err)
		return
	}
	q := wire.NewQuery(r)
	p := projectDir(c)
	if s := q.String("path"); s != nil && *s != "" {
		p = resolvePath(c, *s, "path", q)
	}
	if !q.OK(w) {
		return
	}
	a.proxyJSON(w, r, c, http.MethodGet, "/api/git/changes?path="+url.QueryEscape(p), nil)
}

// gitDiff: GET /api/v1/app-conversations/{id}/git/diff?path=FILE —
// {modified, original} of one file.
func (a *API) gitDiff(w http.ResponseWriter, r *http.Request) {
	c, err := a.ownConversation(r, r.PathValue("conversation_id"))
	if err != nil {
		writeErr(w, err)
		return
	}
	q := wire.NewQuery(r)
	s := q.String("path")
	p := ""
	if s == nil || *s == "" {
		q.Errs = append(q.Errs, strictjson.Error{Loc: []any{"query", "path"}, Msg: "Field required", Type: "missing"})
	} else {
		p = resolvePath(c, *s, "path", q)
	}
	if !q.OK(w) {
		return
	}
	a.proxyJSON(w, r, c, http.MethodGet, "/api/git/diff?path="+url.QueryEscape(p), nil)
}

// proxyJSON calls the conversation's agent server and passes its JSON on.
func (a *API) proxyJSON(w http.ResponseWriter, r *http.Request, c acs.Conversation, method, p string, body any) {
	_, client, err := a.liveConversation(r.Context(), c)
	if err != nil {
		writeErr(w, err)
		return
	}
	raw, err := client.Raw(r.Context(), method, p, body)
	if err != nil {
		writeAgentErr(w, err)
		return
	}
	wire.WriteRaw(w, http.StatusOK, raw)
}

// SkillJSON is one skill of GET .../skills.
type SkillJSON struct {
	Name     string   `json:"name"`
	Type     string   `json:"type"`
	Content  string   `json:"content"`
	Triggers []string `json:"triggers"`
}

// listSkills: GET /api/v1/app-conversations/{id}/skills — the skills the
// agent server loads for the project directory.
func (a *API) listSkills(w http.ResponseWriter, r *http.Request) {
	var resp struct {
		Skills []SkillJSON `json:"skills"`
	}
	if !a.postProject(w, r, "/api/skills", &resp) {
		return
	}
	if resp.Skills == nil {
		resp.Skills = []SkillJSON{}
	}
	for i := range resp.Skills {
		if resp.Skills[i].Triggers == nil {
			resp.Skills[i].Triggers = []string{}
		}
	}
	wire.WriteJSON(w, http.StatusOK, resp)
}

// HookEventJSON is one event type of GET .../hooks.
type HookEventJSON struct {
	EventType string          `json:"event_type"`
	Matchers  json.RawMessage `json:"matchers"`
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
	out := struct {
		Hooks []HookEventJSON `json:"hooks"`
	}{Hooks: []HookEventJSON{}}
	for _, ev := range []string{"pre_tool_use", "post_tool_use", "user_prompt_submit", "session_start", "session_end", "stop"} {
		if m, ok := resp.HookConfig[ev]; ok && len(m) > 0 && string(m) != "null" && string(m) != "[]" {
			out.Hooks = append(out.Hooks, HookEventJSON{EventType: ev, Matchers: m})
		}
	}
	wire.WriteJSON(w, http.StatusOK, out)
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
	_, client, err := a.liveConversation(r.Context(), c)
	if err != nil {
		writeErr(w, err)
		return false
	}
	if err := client.Post(r.Context(), path, map[string]any{"project_dir": projectDir(c)}, out); err != nil {
		writeAgentErr(w, err)
		return false
	}
	return true
}
