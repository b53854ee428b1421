package agentserver

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/acs-project/acs/internal/httpjson"
	"github.com/acs-project/acs/sandbox/agentwire"
	"github.com/acs-project/acs/sandbox/agentwire/settingsschema"
)

// Server metadata: GET /api/llm/providers, /api/llm/models[?provider=],
// /api/llm/models/verified, /api/settings/agent-schema,
// /api/settings/conversation-schema, /api/vscode/status and
// /api/desktop/url.
//
// The model lists come from configuration (LLM_MODEL, ACS_LLM_MODELS and
// the saved profiles' models: the "verified" ones) and from the /models
// route of the configured OpenAI-compatible endpoint (the active profile's
// base_url and key, else LLM_BASE_URL and LLM_API_KEY). A model name is
// provider/model; an endpoint's ids without a provider are reported as
// openai/<id> (the OpenAI-compatible provider). A failing endpoint only
// leaves its models out.

func (s *Server) metaRoutes(api func(string, http.HandlerFunc)) {
	api("GET /api/llm/providers", s.llmProviders)
	api("GET /api/llm/models", s.llmModels)
	api("GET /api/llm/models/verified", s.llmVerifiedModels)
	api("GET /api/settings/agent-schema", func(w http.ResponseWriter, _ *http.Request) {
		httpjson.WriteJSON(w, http.StatusOK, settingsschema.Agent())
	})
	api("GET /api/settings/conversation-schema", func(w http.ResponseWriter, _ *http.Request) {
		httpjson.WriteJSON(w, http.StatusOK, settingsschema.Conversation())
	})
	api("GET /api/vscode/status", func(w http.ResponseWriter, _ *http.Request) {
		msg := "VSCode is not available in this sandbox"
		httpjson.WriteJSON(w, http.StatusOK, agentwire.VSCodeStatus{Message: &msg})
	})
	api("GET /api/desktop/url", func(w http.ResponseWriter, _ *http.Request) {
		if s.cfg.DesktopURL == "" {
			httpjson.WriteDetail(w, http.StatusServiceUnavailable, "Desktop is disabled in configuration: this sandbox has no desktop (set ACS_DESKTOP_URL to enable it)")
			return
		}
		u := s.cfg.DesktopURL
		httpjson.WriteJSON(w, http.StatusOK, agentwire.DesktopURL{URL: &u})
	})
}

// providerOf splits a model name into its provider and the rest; a name
// without a provider is OpenAI's (openai-compatible).
func providerOf(model string) (provider, name string) {
	if p, n, ok := strings.Cut(model, "/"); ok && p != "" && n != "" {
		return p, n
	}
	return "openai", model
}

// configuredModels are the models configuration names: LLM_MODEL,
// ACS_LLM_MODELS and every saved profile's model.
func (s *Server) configuredModels() []string {
	var out []string
	if s.cfg.LLMModel != "" {
		out = append(out, s.cfg.LLMModel)
	}
	out = append(out, s.cfg.LLMModels...)
	out = append(out, s.profiles.models()...)
	return out
}

// allModels are the configured models and the endpoint's, sorted, without
// duplicates.
func (s *Server) allModels(ctx context.Context) []string {
	models := s.configuredModels()
	for _, id := range s.endpointModels(ctx) {
		if p, n := providerOf(id); !strings.Contains(id, "/") {
			id = p + "/" + n
		}
		models = append(models, id)
	}
	slices.Sort(models)
	return slices.Compact(models)
}

func (s *Server) llmProviders(w http.ResponseWriter, r *http.Request) {
	out := []string{}
	for _, m := range s.allModels(r.Context()) {
		p, _ := providerOf(m)
		out = append(out, p)
	}
	slices.Sort(out)
	httpjson.WriteJSON(w, http.StatusOK, agentwire.ProvidersResponse{Providers: slices.Compact(out)})
}

func (s *Server) llmModels(w http.ResponseWriter, r *http.Request) {
	q := httpjson.NewQuery(r)
	provider := q.String("provider")
	if !q.OK(w) {
		return
	}
	out := []string{}
	for _, m := range s.allModels(r.Context()) {
		if p, _ := providerOf(m); provider == nil || p == *provider {
			out = append(out, m)
		}
	}
	httpjson.WriteJSON(w, http.StatusOK, agentwire.ModelsResponse{Models: out})
}

func (s *Server) llmVerifiedModels(w http.ResponseWriter, _ *http.Request) {
	out := map[string][]string{}
	for _, m := range s.configuredModels() {
		p, n := providerOf(m)
		if !slices.Contains(out[p], n) {
			out[p] = append(out[p], n)
		}
	}
	for _, v := range out {
		slices.Sort(v)
	}
	httpjson.WriteJSON(w, http.StatusOK, agentwire.VerifiedModelsResponse{Models: out})
}

// modelsTTL is how long an endpoint's model list is reused.
const modelsTTL = time.Minute

// modelsRetry is how long a failed endpoint is not asked again.
const modelsRetry = 10 * time.Second

// modelsTimeout bounds one /models request.
const modelsTimeout = 5 * time.Second

// modelCache remembers the model list of the last endpoint asked.
type modelCache struct {
	mu      sync.Mutex
	key     string // base URL + "\x00" + API key
	fetched time.Time
	ids     []string
	failed  bool
}

// endpointModels lists the ids the configured endpoint's /models returns
// (nil without an endpoint or when it fails; failures are logged without
// the key).
func (s *Server) endpointModels(ctx context.Context) []string {
	base, key := s.cfg.LLMBaseURL, s.cfg.LLMAPIKey
	if p, ok := s.profiles.activeLLM(); ok && p.BaseURL != nil && *p.BaseURL != "" {
		base, key = *p.BaseURL, ""
		if p.APIKey != nil {
			key = *p.APIKey
		}
	}
	if base == "" {
		return nil
	}
	c := &s.models
	c.mu.Lock()
	defer c.mu.Unlock()
	ck := base + "\x00" + key
	ttl := modelsTTL
	if c.failed {
		ttl = modelsRetry
	}
	if c.key == ck && time.Since(c.fetched) < ttl {
		return c.ids
	}
	ids, err := fetchModels(ctx, base, key)
	c.key, c.fetched, c.ids, c.failed = ck, time.Now(), ids, err != nil
	if err != nil {
		slog.Warn("agent server: listing the LLM endpoint's models failed; serving the configured models only", "error", s.masker.Mask(err.Error()))
		c.ids = nil
	}
	return c.ids
}

// fetchModels asks an OpenAI-compatible endpoint for its models.
func fetchModels(ctx context.Context, base, key string) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, modelsTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(base, "/")+"/models", nil)
	if err != nil {
		return nil, fmt.Errorf("list models: bad base URL")
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("list models at %s: request failed", req.URL.Redacted())
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("list models at %s: HTTP %d", req.URL.Redacted(), resp.StatusCode)
	}
	var body struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 8<<20)).Decode(&body); err != nil {
		return nil, fmt.Errorf("list models at %s: not an OpenAI model list", req.URL.Redacted())
	}
	ids := []string{}
	for _, d := range body.Data {
		if d.ID != "" {
			ids = append(ids, d.ID)
		}
	}
	return ids, nil
}
