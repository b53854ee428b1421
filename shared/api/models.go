package api

import (
	"context"
	"net/url"
	"strconv"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/v1wire"
)

// taskJSON is the task as the API shows it; its details read with the
// routes they refer to written out (v1wire.WithRoutes).
func taskJSON(t acs.StartTask) v1wire.StartTask {
	owner := t.OwnerID
	out := v1wire.StartTask{ID: t.ID, CreatedByUserID: &owner, Status: string(t.Status),
		AppConversationID: t.AppConversationID, SandboxID: t.SandboxID, AgentServerURL: t.AgentServerURL,
		Request: t.Request, CreatedAt: events.At(t.CreatedAt), UpdatedAt: events.At(t.UpdatedAt)}
	if t.Detail != nil {
		d := v1wire.WithRoutes(*t.Detail)
		out.Detail = &d
	}
	if t.Placement != "" {
		p := t.Placement
		out.Placement = &p
	}
	for _, s := range t.Steps {
		sj := v1wire.Step{Status: string(s.Status), StartedAt: events.At(s.StartedAt)}
		if s.Detail != "" {
			d := v1wire.WithRoutes(s.Detail)
			sj.Detail = &d
		}
		out.Steps = append(out.Steps, sj)
	}
	return out
}

func pageOf[T any](items []T, next string) v1wire.Page[T] {
	p := v1wire.Page[T]{Items: items}
	if p.Items == nil {
		p.Items = []T{}
	}
	if next != "" {
		p.NextPageID = &next
	}
	return p
}

// liveSandbox refreshes a sandbox from its runtime and returns it with the
// runtime's session key when running.
func (a *API) liveSandbox(ctx context.Context, sb acs.Sandbox) (acs.Sandbox, string) {
	sb, st := a.life.Refresh(ctx, sb)
	if sb.Status != acs.SandboxRunning {
		return sb, ""
	}
	return sb, st.SessionKey
}

// sandboxView caches live sandboxes for one request (a page of
// conversations often shares a few sandboxes).
type sandboxView struct {
	a     *API
	cache map[string]*liveSB
}

type liveSB struct {
	sb  acs.Sandbox
	key string
	ok  bool
}

func (a *API) view() *sandboxView { return &sandboxView{a: a, cache: map[string]*liveSB{}} }

func (v *sandboxView) get(ctx context.Context, id string) (acs.Sandbox, string, bool) {
	if l, ok := v.cache[id]; ok {
		return l.sb, l.key, l.ok
	}
	l := &liveSB{}
	if sb, err := v.a.conv.Sandbox(ctx, id); err == nil {
		l.sb, l.key = v.a.liveSandbox(ctx, sb)
		l.ok = true
	}
	v.cache[id] = l
	return l.sb, l.key, l.ok
}

func sandboxJSON(sb acs.Sandbox, key string) v1wire.Sandbox {
	owner := sb.OwnerID
	out := v1wire.Sandbox{ID: sb.ID, CreatedByUserID: &owner, SandboxSpecID: sb.SpecID, Status: string(sb.Status),
		CreatedAt: events.At(sb.CreatedAt), Conversations: sb.ConversationCount(), LastUsedAt: events.At(sb.LastUsedAt)}
	if sb.Detail != "" {
		d := sb.Detail
		out.Detail = &d
	}
	if sb.Status == acs.SandboxRunning && sb.AgentURL != "" {
		if key != "" {
			out.SessionAPIKey = &key
		}
		out.ExposedURLs = []v1wire.ExposedURL{{Name: "AGENT_SERVER", URL: sb.AgentURL, Port: portOf(sb.AgentURL)}}
	}
	return out
}

func portOf(raw string) int {
	u, err := url.Parse(raw)
	if err != nil {
		return 0
	}
	if p := u.Port(); p != "" {
		n, _ := strconv.Atoi(p)
		return n
	}
	if u.Scheme == "https" {
		return 443
	}
	return 80
}

// conversationJSON composes the record with the sandbox's live status.
// sandbox_status reads PAUSED when the sandbox is paused, and also while its
// agent waits for the user's confirmation or backs off an LLM rate limit
// with the sandbox running (the spec's transition table).
func (a *API) conversationJSON(ctx context.Context, v *sandboxView, c acs.Conversation) v1wire.Conversation {
	owner := c.OwnerID
	out := v1wire.Conversation{ID: c.ID, CreatedByUserID: &owner, SandboxID: c.SandboxID,
		SelectedRepository: c.SelectedRepository, SelectedBranch: c.SelectedBranch, GitProvider: c.GitProvider,
		Title: c.Title, Trigger: c.Trigger, PRNumber: c.PRNumber, LLMModel: c.LLMModel, AgentKind: "openhands",
		Metrics: c.Metrics, ParentConversationID: c.ParentConversationID, SubConversationIDs: append([]string{}, c.SubConversationIDs...),
		Public: c.Public, Tags: c.Tags, CreatedAt: events.At(c.CreatedAt), UpdatedAt: events.At(c.UpdatedAt),
		SandboxStatus: string(acs.SandboxMissing)}
	if out.PRNumber == nil {
		out.PRNumber = []int{}
	}
	if out.Tags == nil {
		out.Tags = map[string]string{}
	}
	sb, key, ok := v.get(ctx, c.SandboxID)
	if !ok {
		return out
	}
	out.SandboxStatus = string(sb.Status)
	if sb.Status == acs.SandboxRunning {
		if c.ExecutionStatus != "" {
			s := c.ExecutionStatus
			out.ExecutionStatus = &s
		}
		if c.ExecutionStatus == "waiting_for_confirmation" || (c.RateLimitedUntil != nil && a.now().Before(*c.RateLimitedUntil)) {
			out.SandboxStatus = string(acs.SandboxPaused)
		}
		if sb.AgentURL != "" {
			u := sb.AgentURL + "/api/conversations/" + c.ID
			out.ConversationURL = &u
			if key != "" {
				out.SessionAPIKey = &key
			}
		}
	}
	return out
}
