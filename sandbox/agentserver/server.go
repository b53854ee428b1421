package agentserver

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/google/uuid"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/events/strictjson"
	"github.com/acs-project/acs/internal/diskfull"
	"github.com/acs-project/acs/internal/httpjson"
	"github.com/acs-project/acs/internal/openapi"
	"github.com/acs-project/acs/internal/wsarchive"
	"github.com/acs-project/acs/sandbox/agent"
	"github.com/acs-project/acs/sandbox/agentwire"
	"github.com/acs-project/acs/sandbox/bashapi"
	"github.com/acs-project/acs/sandbox/eventlog"
	"github.com/acs-project/acs/sandbox/fileapi"
	"github.com/acs-project/acs/sandbox/gitreview"
	"github.com/acs-project/acs/sandbox/secrets"
	"github.com/acs-project/acs/sandbox/skills"
	"github.com/acs-project/acs/sandbox/spare"
	"github.com/acs-project/acs/sandbox/tools"
	"github.com/acs-project/acs/sandbox/webhook"
)

// Server serves one sandbox's conversations.
type Server struct {
	cfg     Config
	started time.Time
	active  atomic.Int64 // unix nanos of the last activity
	ready   atomic.Bool
	push    *webhook.Pusher
	bash    *bashapi.Service
	mux     *http.ServeMux
	masker  *secrets.Masker
	cipher  *secrets.Cipher
	// ownMasked is how many of the masker's values are the server's own
	// session keys (see workspaceArchive).
	ownMasked int
	// installed manages the installed skills (skillsinstalled.go).
	installed *skills.Installed
	// convDirs and workspaces are spare conversation directories and
	// empty repositories' work trees, made ahead of creates (see
	// newSpares); workspaces is nil without git.
	convDirs, workspaces *spare.Pool

	mu    sync.RWMutex
	convs map[uuid.UUID]*agent.Conversation

	profiles *profileStore
	models   modelCache // the LLM endpoint's model list

	// patterns are the route patterns routes() registered; docs is their
	// OpenAPI document (openapi.go).
	patterns []string
	docs     *openapi.Docs
}

// New loads the conversations persisted under cfg.ConversationsDir and
// returns a ready server. Conversations that were running come back with
// status error (see agent.Load).
func New(ctx context.Context, cfg Config) (*Server, error) {
	if err := os.MkdirAll(cfg.ConversationsDir, 0o700); err != nil {
		return nil, fmt.Errorf("create conversations dir: %w", err)
	}
	if err := os.MkdirAll(cfg.WorkspaceDir, 0o755); err != nil {
		return nil, fmt.Errorf("create workspace dir: %w", err)
	}
	key := ""
	if len(cfg.SessionKeys) > 0 {
		key = cfg.SessionKeys[0]
	}
	s := &Server{cfg: cfg, started: time.Now(), convs: map[uuid.UUID]*agent.Conversation{},
		push:   webhook.New(webhook.Config{BaseURLs: cfg.WebhookURLs, SessionKey: key}),
		masker: cfg.Masker}
	if s.masker == nil {
		s.masker = secrets.NewMasker()
	}
	// The server's own credentials are secrets too: a tool never sees them
	// (procenv), and should one reach output anyway it is masked.
	s.masker.Add(cfg.SecretKey)
	s.masker.Add(cfg.SessionKeys...)
	own := map[string]bool{}
	for _, k := range cfg.SessionKeys {
		if len(k) >= secrets.MinLength {
			own[k] = true
		}
	}
	s.ownMasked = len(own)
	// Secrets are sealed with OH_SECRET_KEY, else the first session key;
	// without either they are not persisted.
	s.cipher = secrets.NewCipher(cfg.SecretKey)
	if s.cipher == nil {
		s.cipher = secrets.NewCipher(key)
	}
	if s.cipher == nil {
		slog.Warn("agent server: no OH_SECRET_KEY or session key; conversation secrets and LLM keys are kept in memory only and lost on restart")
	}
	s.touch()
	if cfg.BashEventsDir == "" {
		cfg.BashEventsDir = filepath.Join(filepath.Dir(cfg.ConversationsDir), "bash_events")
		s.cfg.BashEventsDir = cfg.BashEventsDir
	}
	bash, err := bashapi.New(bashapi.Options{Dir: cfg.BashEventsDir, WorkDir: cfg.WorkspaceDir,
		Env: s.secretEnv, Mask: s.masker.Mask, SafeCut: s.masker.SafeCut, AddSecrets: s.masker.Add})
	if err != nil {
		return nil, fmt.Errorf("start the bash API: %w", err)
	}
	s.bash = bash
	if cfg.ProfilesDir == "" {
		s.cfg.ProfilesDir = filepath.Join(filepath.Dir(cfg.ConversationsDir), "profiles")
	}
	s.profiles = &profileStore{dir: s.cfg.ProfilesDir, cipher: s.cipher, masker: s.masker}
	s.masker.Add(cfg.LLMAPIKey)
	s.installed = skills.NewInstalled(installedSkillsDir(s.cfg))
	entries, err := os.ReadDir(cfg.ConversationsDir)
	if err != nil {
		return nil, fmt.Errorf("list conversations: %w", err)
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(cfg.ConversationsDir, e.Name())
		if _, err := os.Stat(filepath.Join(dir, "meta.json")); err != nil {
			continue
		}
		c, err := agent.Load(ctx, s.convOptions(dir))
		if err != nil {
			slog.Error("agent server: skipping conversation that failed to load", "dir", dir, "error", err)
			continue
		}
		s.convs[c.ID()] = c
		s.watch(c)
	}
	s.newSpares()
	s.routes()
	s.ready.Store(true)
	slog.Info("agent server ready", "conversations", len(s.convs), "dir", cfg.ConversationsDir)
	return s, nil
}

// Close stops every conversation and the webhook delivery.
func (s *Server) Close() {
	s.mu.Lock()
	convs := s.convs
	s.convs = map[uuid.UUID]*agent.Conversation{}
	s.mu.Unlock()
	for _, c := range convs {
		c.Close()
	}
	s.convDirs.Close()
	if s.workspaces != nil {
		s.workspaces.Close()
	}
	s.bash.Close()
	s.push.Close()
}

// Handler returns the HTTP handler. Every response body passes through the
// secret masker; a WebSocket upgrade from an origin socketOriginOK refuses
// is a 403 whatever its route.
func (s *Server) Handler() http.Handler {
	masked := s.masker.Middleware(s.mux)
	return s.cors(s.socketOrigins(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.canonicalWorkspace(r)
		if r.URL.Path == "/api/workspace/archive" || strings.HasPrefix(r.URL.Path, trajectoryPrefix) {
			// The workspace archive is compressed binary: masking its bytes
			// could only corrupt it. It masks each file's content, and the
			// entry names, before compressing instead (workspaceArchive):
			// an agent can write a secret into a file.
			s.mux.ServeHTTP(w, r)
			return
		}
		if exposesProfileSecrets(r) {
			// The caller asked for a profile's credentials in clear
			// (GET /api/profiles/{name}, X-Expose-Secrets: plaintext).
			s.mux.ServeHTTP(w, r)
			return
		}
		masked.ServeHTTP(w, r)
	})))
}

// Masker is the server's secret masker (for wrapping the process's log
// handler).
func (s *Server) Masker() *secrets.Masker { return s.masker }

// convOptions are the options of the conversation persisted in dir.
func (s *Server) convOptions(dir string) agent.Options {
	return agent.Options{Dir: dir, OnChange: s.onChange, Masker: s.masker, Cipher: s.cipher,
		TracerProvider: s.cfg.TracerProvider, SkillDirs: s.cfg.SkillDirs, MCPConnectTimeout: s.cfg.MCPConnectTimeout}
}

// secretEnv is the bash API's extra environment: the secrets of every
// conversation (on a name clash, the conversation created last wins).
func (s *Server) secretEnv() []string {
	s.mu.RLock()
	convs := make([]*agent.Conversation, 0, len(s.convs))
	for _, c := range s.convs {
		convs = append(convs, c)
	}
	s.mu.RUnlock()
	sort.Slice(convs, func(i, j int) bool { return convs[i].CreatedAt().Before(convs[j].CreatedAt()) })
	var env []string
	for _, c := range convs {
		env = append(env, c.SecretEnv()...)
	}
	return env
}

func (s *Server) touch() { s.active.Store(time.Now().UnixNano()) }

func (s *Server) watch(c *agent.Conversation) {
	s.push.Watch(c.ID(), c.Log(), filepath.Join(c.Dir(), "webhook"))
	s.onChange(c)
}

// createdInfoDelay is how long a created conversation's first info waits
// before it is reported (unless a change reports it first): the control
// plane that asked for it stores its record once the creation is
// answered, and refuses a report before (which is retried later).
const createdInfoDelay = 250 * time.Millisecond

// watchCreated is watch for a conversation a request just created.
func (s *Server) watchCreated(c *agent.Conversation) {
	s.push.Watch(c.ID(), c.Log(), filepath.Join(c.Dir(), "webhook"))
	s.push.NotifyInfoAfter(c.ID(), infoOf(c), createdInfoDelay)
}

func (s *Server) onChange(c *agent.Conversation) {
	s.push.NotifyInfo(c.ID(), infoOf(c))
}

// infoOf reads c's info when its report is sent.
func infoOf(c *agent.Conversation) func() *agentwire.ConversationInfo {
	return func() *agentwire.ConversationInfo {
		info := c.Info()
		return &info
	}
}

func (s *Server) routes() {
	m := &recordingMux{ServeMux: http.NewServeMux()}
	m.HandleFunc("GET /alive", func(w http.ResponseWriter, _ *http.Request) {
		httpjson.WriteJSON(w, 200, ServerStatus{Status: "ok"})
	})
	m.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) {
		httpjson.WriteJSON(w, 200, ServerStatus{Status: "ok"})
	})
	m.HandleFunc("GET /ready", func(w http.ResponseWriter, _ *http.Request) {
		if !s.ready.Load() {
			msg := "Server is still initializing"
			httpjson.WriteJSON(w, 503, ServerStatus{Status: "initializing", Message: &msg})
			return
		}
		httpjson.WriteJSON(w, 200, ServerStatus{Status: "ready"})
	})
	m.HandleFunc("GET /server_info", s.serverInfo)
	m.HandleFunc("GET /{$}", s.serverInfo)
	// The OpenAPI document of every route registered here, and its page:
	// open, as OpenHands' (openapi.go).
	m.HandleFunc("GET /openapi.json", s.serveOpenAPI)
	m.HandleFunc("GET /docs", s.serveDocs)

	api := func(pattern string, h http.HandlerFunc) { m.Handle(pattern, s.auth(h)) }
	api("POST /api/conversations", s.createConversation)
	api("GET /api/conversations", s.batchGetConversations)
	api("GET /api/conversations/search", s.searchConversations)
	api("GET /api/conversations/count", s.countConversations)
	api("GET /api/conversations/{id}", s.withConversation(s.getConversation))
	api("POST /api/conversations/{id}/events", s.withConversation(s.sendMessage))
	api("POST /api/conversations/{id}/run", s.withConversation(noBody((*agent.Conversation).Run)))
	api("POST /api/conversations/{id}/pause", s.withConversation(noBody((*agent.Conversation).Pause)))
	api("GET /api/conversations/{id}/events/search", s.withConversation(s.searchEvents))
	api("GET /api/conversations/{id}/events/count", s.withConversation(s.countEvents))
	api("GET /api/conversations/{id}/events/{event_id}", s.withConversation(s.getEvent))
	api("GET /api/conversations/{id}/events", s.withConversation(s.batchGetEvents))
	api("POST /api/conversations/{id}/events/respond_to_confirmation", s.withConversation(withBody(func(c *agent.Conversation, ctx context.Context, b agentwire.ConfirmationResponse) error {
		return c.RespondToConfirmation(ctx, b.Accept, b.Reason)
	})))
	api("DELETE /api/conversations/{id}", s.withConversation(s.deleteConversation))
	api("PATCH /api/conversations/{id}", s.withConversation(withBody((*agent.Conversation).Update)))
	api("POST /api/conversations/{id}/interrupt", s.withConversation(noBody((*agent.Conversation).Interrupt)))
	api("POST /api/conversations/{id}/secrets", s.withConversation(withBody(func(c *agent.Conversation, ctx context.Context, b agentwire.UpdateSecretsRequest) error {
		return c.UpdateSecrets(ctx, b.Secrets)
	})))
	api("POST /api/conversations/{id}/confirmation_policy", s.withConversation(withBody(func(c *agent.Conversation, ctx context.Context, b agentwire.SetConfirmationPolicyRequest) error {
		return c.SetConfirmationPolicy(ctx, b.Policy)
	})))
	api("POST /api/conversations/{id}/security_analyzer", s.withConversation(withBody(func(c *agent.Conversation, ctx context.Context, b agentwire.SetSecurityAnalyzerRequest) error {
		return c.SetSecurityAnalyzer(ctx, b.SecurityAnalyzer)
	})))
	api("POST /api/conversations/{id}/ask_agent", s.withConversation(s.askAgent))
	api("POST /api/conversations/{id}/condense", s.withConversation(noBody((*agent.Conversation).RequestCondensation)))
	api("GET /api/conversations/{id}/agent_final_response", s.withConversation(s.finalResponse))
	api("POST /api/conversations/{id}/fork", s.withConversation(s.fork))
	api("POST /api/conversations/{id}/navigate", s.withConversation(s.navigate))
	api("POST /api/conversations/{id}/goal", s.withConversation(s.startGoal))
	api("POST /api/conversations/{id}/goal/resume", s.withConversation(noBody((*agent.Conversation).ResumeGoal)))
	api("POST /api/conversations/{id}/goal/stop", s.withConversation(noBody((*agent.Conversation).StopGoal)))
	api("POST /api/skills", s.listSkills)
	s.installedSkillRoutes(api)
	api("POST /api/hooks", s.listHooks)
	api("GET /api/tools/", s.listTools)
	api("GET /api/tools", s.listTools)
	api("GET /api/workspace/archive", s.workspaceArchive)
	s.metaRoutes(api)
	s.profileRoutes(api)
	api("GET "+trajectoryPrefix+"{id}", s.withConversation(s.downloadTrajectory))
	wrap := func(h http.HandlerFunc) http.Handler { return s.auth(h) }
	gitreview.Routes(m, s.roots, wrap)
	s.bash.Routes(m, wrap)
	m.HandleFunc("GET /sockets/bash-events", s.bash.SocketHandler(s.keyOK))
	fileapi.Routes(m, s.roots, wrap)
	api("/api/", func(w http.ResponseWriter, r *http.Request) { httpjson.WriteDetail(w, 404, "Not Found") })
	m.HandleFunc("GET /sockets/events/{id}", s.eventsSocket)
	s.mux = m.ServeMux
	s.patterns = m.patterns
	s.docs = openapi.NewDocs(s.openAPIDocument)
}

// keyOK compares a presented key with every configured key in constant time.
func (s *Server) keyOK(key string) bool {
	if len(s.cfg.SessionKeys) == 0 {
		return true
	}
	ok := 0
	for _, k := range s.cfg.SessionKeys {
		ok |= subtle.ConstantTimeCompare([]byte(k), []byte(key))
	}
	return ok == 1
}

func (s *Server) auth(h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.keyOK(r.Header.Get(agentwire.SessionKeyHeader)) {
			httpjson.WriteDetail(w, http.StatusUnauthorized, "Unauthorized")
			return
		}
		s.touch()
		h(w, r)
	})
}

func (s *Server) serverInfo(w http.ResponseWriter, _ *http.Request) {
	info := agentwire.ServerInfo{
		Uptime: int64(time.Since(s.started).Seconds()), IdleTime: int64(time.Since(time.Unix(0, s.active.Load())).Seconds()),
		Title: "OpenHands Agent Server", Version: Version, SDKVersion: Version, ToolsVersion: Version, WorkspaceVersion: Version,
		BuildGitSHA: s.cfg.BuildSHA, BuildGitRef: s.cfg.BuildRef, GoVersion: runtime.Version(),
		UsableTools:               s.usableTools(),
		RuntimeIdleTimeoutSeconds: s.cfg.IdleTimeoutSeconds,
		Capabilities:              []string{},
		Implementation:            "acs", Started: s.started.UTC().Format(time.RFC3339), ProcessID: os.Getpid(),
	}
	docs := "/docs"
	info.Docs = &docs
	if s.cfg.IdleTimeoutSeconds != nil {
		v := *s.cfg.IdleTimeoutSeconds * 9 / 10
		info.MaxForegroundTerminalTimeoutSecs = &v
	}
	s.mu.RLock()
	info.ConversationCount = len(s.convs)
	for _, c := range s.convs {
		if c.Running() {
			info.RunningConversationCount++
		}
	}
	s.mu.RUnlock()
	httpjson.WriteJSON(w, 200, info)
}

func (s *Server) listTools(w http.ResponseWriter, _ *http.Request) {
	httpjson.WriteJSON(w, 200, tools.Names())
}

// workspaceArchive streams a gzip-compressed tar of the workspace
// (wsarchive), leaving out the server's own state directories that lie
// inside it. An archive that fails before its first byte is a JSON error (404
// for a missing workspace, 500 otherwise); one that fails midway aborts the
// response, so the client sees a broken transfer rather than a short archive.
// The content of every regular file, entry names and link targets pass
// through the secret masker (the values of every loaded conversation, as for
// the other responses): a file holding a secret is archived with it replaced
// by <secret-hidden> (and a size to match), any other byte for byte. The
// server's session keys alone do not turn masking on.
func (s *Server) workspaceArchive(w http.ResponseWriter, r *http.Request) {
	aw := &archiveResponse{w: w}
	opts := wsarchive.Options{Exclude: s.stateInWorkspace()}
	// Masking buffers each file (spilling big ones to a temporary file), so
	// it is done only when there is something to hide besides the server's
	// own session keys: the archive is taken when the sandbox is cleaned up,
	// after which those keys open nothing.
	if s.masker.Len() > s.ownMasked {
		opts.Mask = func(w io.Writer) io.WriteCloser { return s.masker.Writer(w) }
		opts.MaskName = s.masker.Mask
	}
	err := opts.Write(r.Context(), s.cfg.WorkspaceDir, aw)
	switch {
	case err == nil:
		return
	case aw.started || r.Context().Err() != nil:
		// Mid-stream, or the client is gone: no answer can be given.
		if r.Context().Err() == nil {
			slog.Error("workspace archive failed midway", "error", err)
		}
		panic(http.ErrAbortHandler)
	case errors.Is(err, fs.ErrNotExist):
		httpjson.WriteDetail(w, http.StatusNotFound, "Workspace not found")
	default:
		slog.Error("workspace archive", "error", err)
		httpjson.WriteDetail(w, http.StatusInternalServerError, "Could not archive the workspace: "+s.masker.Mask(err.Error()))
	}
}

// stateInWorkspace lists the conversations and bash-events directories that
// lie inside the workspace (OH_CONVERSATIONS_PATH defaults to
// <workspace>/conversations), relative to it: the agent's own state, not the
// user's files. Symbolic links in the configured paths are resolved first.
func (s *Server) stateInWorkspace() []string {
	ws := resolvePath(s.cfg.WorkspaceDir)
	var out []string
	for _, d := range []string{s.cfg.ConversationsDir, s.cfg.BashEventsDir, s.cfg.ProfilesDir} {
		if d == "" {
			continue
		}
		rel, err := filepath.Rel(ws, resolvePath(d))
		if err != nil || rel == "." || !filepath.IsLocal(rel) {
			continue
		}
		out = append(out, filepath.ToSlash(rel))
	}
	return out
}

// resolvePath makes p absolute and resolves its symbolic links, as far as
// possible.
func resolvePath(p string) string {
	if abs, err := filepath.Abs(p); err == nil {
		p = abs
	}
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return p
}

// archiveResponse sends the archive headers and status with the first byte,
// so that an archive failing before it can still be answered with an error.
type archiveResponse struct {
	w       http.ResponseWriter
	started bool
}

func (a *archiveResponse) Write(p []byte) (int, error) {
	if !a.started {
		a.started = true
		h := a.w.Header()
		h.Set("Content-Type", "application/gzip")
		h.Set("Content-Disposition", `attachment; filename="workspace.tar.gz"`)
		h.Set("Cache-Control", "no-store")
		a.w.WriteHeader(http.StatusOK)
	}
	return a.w.Write(p)
}

// roots are the directories the file and git routes may touch: the
// workspace and every conversation's working directory.
func (s *Server) roots() []string {
	out := []string{s.cfg.WorkspaceDir}
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, c := range s.convs {
		out = append(out, c.WorkDir())
	}
	return out
}

func (s *Server) lookup(id uuid.UUID) *agent.Conversation {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.convs[id]
}

// withConversation parses {id} (dashed or hex; 422 otherwise) and answers 404
// for an unknown conversation.
func (s *Server) withConversation(h func(http.ResponseWriter, *http.Request, *agent.Conversation)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id, err := agentwire.ParseID(r.PathValue("id"))
		if err != nil {
			httpjson.WriteValidation(w, strictjson.Errors{{Loc: []any{"path", "conversation_id"}, Msg: err.Error(), Type: "uuid_parsing"}})
			return
		}
		c := s.lookup(id)
		if c == nil {
			httpjson.WriteDetail(w, http.StatusNotFound, "Conversation not found: "+id.String())
			return
		}
		h(w, r, c)
	}
}

func (s *Server) createConversation(w http.ResponseWriter, r *http.Request) {
	var req agentwire.StartConversationRequest
	if !httpjson.DecodeBody(w, r, &req, false) {
		return
	}
	var errs strictjson.Errors
	known := map[string]bool{}
	for _, n := range tools.Names() {
		known[n] = true
	}
	for i, t := range req.Agent.Tools {
		if !known[t.Name] {
			errs = append(errs, strictjson.Error{Loc: []any{"body", "agent", "tools", i, "name"},
				Msg: fmt.Sprintf("Unknown tool %q; available tools: %s", t.Name, strings.Join(tools.Names(), ", ")), Type: "value_error"})
		}
	}
	errs = append(errs, agent.ValidateExtensions(req)...)
	if len(errs) > 0 {
		httpjson.WriteValidation(w, errs)
		return
	}
	id := uuid.New()
	if req.ConversationID != nil {
		id, _ = agentwire.ParseID(*req.ConversationID)
	}
	s.mu.Lock()
	if c, ok := s.convs[id]; ok {
		s.mu.Unlock()
		httpjson.WriteJSON(w, http.StatusOK, c.Info())
		return
	}
	// The spares this create takes are made again once it is over.
	defer s.fillSpares()
	// The working directory is made a git repository while the
	// conversation is created (each mostly waits for the disk), unless a
	// spare one was renamed into place; the request waits for both.
	gitDone := make(chan error, 1)
	if s.takeWorkspace(req.Workspace.WorkingDir) {
		gitDone <- nil
	} else {
		go func() { gitDone <- gitreview.Init(context.WithoutCancel(r.Context()), req.Workspace.WorkingDir) }()
	}
	gitInit := sync.OnceValue(func() error { return <-gitDone })
	defer gitInit()
	dir := filepath.Join(s.cfg.ConversationsDir, agentwire.Hex(id))
	tookDir := s.convDirs.Take(dir)
	c, err := agent.Create(r.Context(), id, req, s.convOptions(dir))
	if err != nil {
		s.mu.Unlock()
		if tookDir {
			os.RemoveAll(dir) // the spare this create took: nothing else made it
		}
		var ute *tools.UnknownToolError
		if errors.As(err, &ute) {
			httpjson.WriteValidation(w, strictjson.Errors{{Loc: []any{"body", "agent", "tools"}, Msg: ute.Error(), Type: "value_error"}})
			return
		}
		var se *agent.SecretsError
		if errors.As(err, &se) {
			httpjson.WriteValidation(w, strictjson.Errors{{Loc: []any{"body", "secrets", se.Name}, Msg: se.Err.Error(), Type: "value_error"}})
			return
		}
		// A working directory that cannot be made where the caller put it
		// (a file in its way, no permission, a read-only file system) is
		// the caller's choice of path; a full disk or an I/O error is not.
		var wde *agent.WorkingDirError
		if errors.As(err, &wde) && callersPath(wde.Err) {
			httpjson.WriteValidation(w, strictjson.Errors{{Loc: []any{"body", "workspace", "working_dir"},
				Msg: "Value error, Cannot create the working directory: " + reason(wde.Err), Type: "value_error"}})
			return
		}
		slog.Error("create conversation", "error", err)
		if diskfull.Is(err) {
			httpjson.WriteInsufficientStorage(w, diskFullDetail)
			return
		}
		httpjson.WriteDetail(w, http.StatusInternalServerError, "Could not create the conversation: "+err.Error())
		return
	}
	s.convs[id] = c
	s.mu.Unlock()
	if err := gitInit(); err != nil {
		slog.Warn("git init of the working directory failed", "dir", req.Workspace.WorkingDir, "error", err)
	}
	s.watchCreated(c)
	if req.InitialMessage != nil {
		msg := *req.InitialMessage
		msg.Run = true
		if _, err := c.SendMessage(r.Context(), msg); err != nil {
			slog.Error("send initial message", "conversation", id, "error", err)
			if diskfull.Is(err) {
				httpjson.WriteInsufficientStorage(w, "Conversation created, but its initial message could not be stored: the disk is full; free space and send it again")
				return
			}
			httpjson.WriteDetail(w, http.StatusInternalServerError, "Conversation created, but the initial message failed: "+err.Error())
			return
		}
	}
	httpjson.WriteJSON(w, http.StatusCreated, c.Info())
}

func (s *Server) getConversation(w http.ResponseWriter, _ *http.Request, c *agent.Conversation) {
	httpjson.WriteJSON(w, 200, c.Info())
}

func (s *Server) batchGetConversations(w http.ResponseWriter, r *http.Request) {
	q := httpjson.NewQuery(r)
	q.Require("ids")
	ids := q.Strings("ids")
	if len(ids) > 100 {
		q.Errs = append(q.Errs, strictjson.Error{Loc: []any{"query", "ids"}, Msg: "List should have at most 100 items", Type: "too_long"})
	}
	out := make([]*agentwire.ConversationInfo, len(ids))
	for i, raw := range ids {
		id, err := agentwire.ParseID(raw)
		if err != nil {
			q.Errs = append(q.Errs, strictjson.Error{Loc: []any{"query", "ids", i}, Msg: err.Error(), Type: "uuid_parsing"})
			continue
		}
		if c := s.lookup(id); c != nil {
			info := c.Info()
			out[i] = &info
		}
	}
	if !q.OK(w) {
		return
	}
	httpjson.WriteJSON(w, 200, out)
}

var conversationSorts = []string{"CREATED_AT", "UPDATED_AT", "CREATED_AT_DESC", "UPDATED_AT_DESC"}

func (s *Server) filteredConversations(q *httpjson.Query) []agentwire.ConversationInfo {
	status := q.Enum("status", "", agentwire.ExecutionStatus("").EnumValues())
	s.mu.RLock()
	var infos []agentwire.ConversationInfo
	for _, c := range s.convs {
		info := c.Info()
		if status == "" || string(info.ExecutionStatus) == status {
			infos = append(infos, info)
		}
	}
	s.mu.RUnlock()
	return infos
}

func (s *Server) searchConversations(w http.ResponseWriter, r *http.Request) {
	q := httpjson.NewQuery(r)
	pageID := q.String("page_id")
	limit := q.Int("limit", 100, 1, 100)
	order := q.Enum("sort_order", "CREATED_AT_DESC", conversationSorts)
	infos := s.filteredConversations(q)
	if !q.OK(w) {
		return
	}
	key := func(i agentwire.ConversationInfo) time.Time {
		if strings.HasPrefix(order, "UPDATED_AT") {
			return i.UpdatedAt.Time
		}
		return i.CreatedAt.Time
	}
	desc := strings.HasSuffix(order, "_DESC")
	sort.SliceStable(infos, func(a, b int) bool {
		ka, kb := key(infos[a]), key(infos[b])
		if ka.Equal(kb) {
			return infos[a].ID < infos[b].ID
		}
		return ka.Before(kb) != desc
	})
	start := 0
	if pageID != nil {
		start = -1
		for i, info := range infos {
			if strings.ReplaceAll(info.ID, "-", "") == strings.ReplaceAll(*pageID, "-", "") {
				start = i
			}
		}
		if start < 0 {
			httpjson.WriteValidation(w, strictjson.Errors{{Loc: []any{"query", "page_id"}, Msg: "Unknown page_id", Type: "value_error"}})
			return
		}
	}
	end := min(len(infos), start+limit)
	page := agentwire.ConversationPage{Items: infos[start:end]}
	if end < len(infos) {
		next := strings.ReplaceAll(infos[end].ID, "-", "")
		page.NextPageID = &next
	}
	httpjson.WriteJSON(w, 200, page)
}

func (s *Server) countConversations(w http.ResponseWriter, r *http.Request) {
	q := httpjson.NewQuery(r)
	infos := s.filteredConversations(q)
	if !q.OK(w) {
		return
	}
	httpjson.WriteJSON(w, 200, len(infos))
}

func (s *Server) sendMessage(w http.ResponseWriter, r *http.Request, c *agent.Conversation) {
	var req agentwire.SendMessageRequest
	if !httpjson.DecodeBody(w, r, &req, false) {
		return
	}
	if _, err := c.SendMessage(r.Context(), req); err != nil {
		conversationError(w, err)
		return
	}
	httpjson.WriteJSON(w, 200, agentwire.Success{Success: true})
}

// diskFullDetail is the detail of a 507: the sandbox's disk (or quota) is
// full, so an event or file could not be stored.
const diskFullDetail = "Insufficient storage: the sandbox's disk is full, so this could not be stored; free space and retry"

func conversationError(w http.ResponseWriter, err error) {
	switch {
	case diskfull.Is(err):
		slog.Error("conversation operation failed: disk full", "error", err)
		httpjson.WriteInsufficientStorage(w, diskFullDetail)
	case errors.Is(err, agent.ErrAlreadyRunning), errors.Is(err, agent.ErrNotWaiting), errors.Is(err, agent.ErrNoCondenser),
		errors.Is(err, agent.ErrGoalRunning):
		httpjson.WriteDetail(w, http.StatusConflict, err.Error())
	case errors.Is(err, agent.ErrNoResumableGoal), errors.Is(err, agent.ErrEmptyObjective):
		httpjson.WriteDetail(w, http.StatusBadRequest, err.Error())
	case errors.Is(err, agent.ErrClosed):
		httpjson.WriteDetail(w, http.StatusNotFound, "Conversation not found")
	case errors.As(err, new(*agent.TitleSecretError)):
		httpjson.WriteValidation(w, titleSecretErrors(err))
	case errors.As(err, new(*agent.SecretsError)):
		httpjson.WriteValidation(w, strictjson.Errors{{Loc: []any{"body", "secrets"}, Msg: err.Error(), Type: "value_error"}})
	default:
		slog.Error("conversation operation failed", "error", err)
		httpjson.WriteDetail(w, http.StatusInternalServerError, err.Error())
	}
}

// titleSecretErrors are the 422 errors of a *agent.TitleSecretError: one at
// body.title for each secret named, as the control plane answers.
func titleSecretErrors(err error) strictjson.Errors {
	var te *agent.TitleSecretError
	errors.As(err, &te)
	loc := []any{"body", "title"}
	if len(te.Names) == 0 {
		return strictjson.Errors{{Loc: loc, Msg: agent.TitleSecretMessage(""), Type: "value_error"}}
	}
	var out strictjson.Errors
	for _, name := range te.Names {
		out = append(out, strictjson.Error{Loc: loc, Msg: agent.TitleSecretMessage(name), Type: "value_error"})
	}
	return out
}

// eventFilter parses the filters shared by events search and count.
func eventFilter(q *httpjson.Query) eventlog.Filter {
	f := eventlog.Filter{Kind: q.EventKind("kind")}
	f.Source = events.Source(q.Enum("source", "", events.Source("").EnumValues()))
	if b := q.String("body"); b != nil {
		f.Body = *b
	}
	f.TimestampGTE = q.Time("timestamp__gte")
	f.TimestampLT = q.Time("timestamp__lt")
	return f
}

// SearchEvents parses the spec's event search parameters from r and writes
// the page of l (or the 422 / paging error). Both the agent server and the
// tests of compatible stores use it.
func SearchEvents(w http.ResponseWriter, r *http.Request, l *eventlog.Log) {
	q := httpjson.NewQuery(r)
	query := eventlog.Query{Filter: eventFilter(q)}
	if p := q.String("page_id"); p != nil {
		query.PageID = *p
	}
	query.Limit = q.Int("limit", 100, 1, 100)
	query.Order = events.EventSortOrder(q.Enum("sort_order", "TIMESTAMP", events.EventSortOrder("").EnumValues()))
	if !q.OK(w) {
		return
	}
	page, err := l.Search(query)
	if errors.Is(err, eventlog.ErrBadPageID) {
		httpjson.WriteValidation(w, strictjson.Errors{{Loc: []any{"query", "page_id"}, Msg: "Unknown page_id: it must be the next_page_id of a previous page", Type: "value_error"}})
		return
	}
	if err != nil {
		slog.Error("search events", "error", err)
		httpjson.WriteDetail(w, 500, "Could not read events")
		return
	}
	httpjson.WriteEventPage(w, page.Items, page.NextPageID)
}

func (s *Server) searchEvents(w http.ResponseWriter, r *http.Request, c *agent.Conversation) {
	SearchEvents(w, r, c.Log())
}

func (s *Server) countEvents(w http.ResponseWriter, r *http.Request, c *agent.Conversation) {
	q := httpjson.NewQuery(r)
	f := eventFilter(q)
	if !q.OK(w) {
		return
	}
	httpjson.WriteJSON(w, 200, c.Log().Count(f))
}

func (s *Server) getEvent(w http.ResponseWriter, r *http.Request, c *agent.Conversation) {
	b, err := c.Log().Get(r.PathValue("event_id"))
	if errors.Is(err, eventlog.ErrNotFound) {
		httpjson.WriteDetail(w, 404, "Event not found: "+r.PathValue("event_id"))
		return
	}
	if err != nil {
		httpjson.WriteDetail(w, 500, "Could not read the event")
		return
	}
	httpjson.WriteRaw(w, 200, b)
}

// callersPath reports whether a failure to create a directory is due to
// the path chosen (as opposed to the machine's state).
func callersPath(err error) bool {
	for _, e := range []syscall.Errno{syscall.ENOTDIR, syscall.EEXIST, syscall.EACCES, syscall.EPERM, syscall.EROFS,
		syscall.ENAMETOOLONG, syscall.EINVAL, syscall.ELOOP} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// reason is a file-system error without the path it names (the path the
// caller sent, or a part of it).
func reason(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}
