package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/acs-project/acs/events/strictjson"
	"github.com/acs-project/acs/internal/pathguard"
	"github.com/acs-project/acs/sandbox/agentwire"
	"github.com/acs-project/acs/sandbox/hooks"
	"github.com/acs-project/acs/sandbox/procenv"
	"github.com/acs-project/acs/sandbox/skills"
	"github.com/acs-project/acs/sandbox/tools/mcp"
)

// Extensions: plugins, skills, hooks and MCP tool servers, prepared by the
// conversation's setup (see setup.go).

// PluginFetchTimeout bounds cloning one plugin repository.
const PluginFetchTimeout = 2 * time.Minute

// ValidateExtensions checks the parts of a start request that configure
// extensions: hook_config, agent.mcp_config, the plugins' mcp_servers and
// inline skills. Errors are located under "body" like strict decoding
// errors, so the API answers them with 422.
func ValidateExtensions(req agentwire.StartConversationRequest) strictjson.Errors {
	var errs strictjson.Errors
	prefix := func(base []any, err error) {
		var se strictjson.Errors
		if errors.As(err, &se) {
			for _, e := range se {
				e.Loc = append(slices.Clone(base), e.Loc...)
				errs = append(errs, e)
			}
			return
		}
		errs = append(errs, strictjson.Error{Loc: base, Msg: err.Error(), Type: "value_error"})
	}
	if len(req.HookConfig) > 0 && string(req.HookConfig) != "null" {
		if _, err := hooks.Parse(req.HookConfig); err != nil {
			prefix([]any{"body", "hook_config"}, err)
		}
	}
	if req.Agent != nil {
		if len(req.Agent.MCPConfig) > 0 && string(req.Agent.MCPConfig) != "null" {
			if _, err := mcp.ParseConfig(req.Agent.MCPConfig); err != nil {
				prefix([]any{"body", "agent", "mcp_config"}, err)
			}
		}
		if ac := req.Agent.AgentContext; ac != nil {
			for i, raw := range ac.Skills {
				if _, err := skills.ParseInline(raw); err != nil {
					prefix([]any{"body", "agent", "agent_context", "skills", i}, err)
				}
			}
		}
	}
	for i, p := range req.Plugins {
		if len(p.MCPServers) > 0 && string(p.MCPServers) != "null" {
			if _, err := mcp.ParseConfig(p.MCPServers); err != nil {
				prefix([]any{"body", "plugins", i, "mcp_servers"}, err)
			}
		}
	}
	return errs
}

// setupPlan is what the setup needs from the request, read on the owner.
type setupPlan struct {
	lookups  map[string]agentwire.SecretSource
	secrets  map[string]string // static values known at open
	plugins  []agentwire.Plugin
	mcp      json.RawMessage
	hookCfg  json.RawMessage
	workDir  string
	ctx      agentwire.AgentContext
	hasAgent bool
}

// slow reports whether the setup may wait on something remote.
func (p *setupPlan) slow() bool {
	return len(p.lookups) > 0 || len(p.plugins) > 0 || (len(p.mcp) > 0 && string(p.mcp) != "null")
}

func (c *Conversation) plan(lookups map[string]agentwire.SecretSource) *setupPlan {
	req := c.meta.Request
	p := &setupPlan{lookups: lookups, secrets: maps.Clone(c.secretVals), plugins: req.Plugins,
		hookCfg: req.HookConfig, workDir: req.Workspace.WorkingDir,
		ctx: agentwire.AgentContext{LoadUserSkills: true, LoadProjectSkills: true}}
	if req.Agent != nil {
		p.mcp = req.Agent.MCPConfig
		if req.Agent.AgentContext != nil {
			p.ctx = *req.Agent.AgentContext
		}
	}
	return p
}

// prepareExtensions loads plugins, skills and hooks and connects the MCP
// servers, with secrets (static and looked up) for placeholders.
func (c *Conversation) prepareExtensions(ctx context.Context, plan *setupPlan, res *setupResult) {
	problem := func(code, format string, args ...any) {
		res.problems = append(res.problems, setupProblem{code: code, detail: c.masker.Mask(fmt.Sprintf(format, args...))})
	}
	var pluginSkills [][]skills.Skill
	var hookCfgs []*hooks.Config
	servers := map[string]mcp.ServerConfig{}
	if len(plan.mcp) > 0 && string(plan.mcp) != "null" {
		s, err := mcp.ParseConfig(plan.mcp)
		if err != nil {
			problem("MCPConfigError", "agent.mcp_config: %v", err)
		}
		maps.Copy(servers, s)
	}
	for i, p := range plan.plugins {
		if len(p.MCPServers) > 0 && string(p.MCPServers) != "null" {
			s, err := mcp.ParseConfig(p.MCPServers)
			if err != nil {
				problem("MCPConfigError", "plugin %s: mcp_servers: %v", p.Source, err)
			}
			maps.Copy(servers, s)
		}
		if strings.HasPrefix(p.Source, "inline") {
			continue // tool servers only, no directory
		}
		dir, err := c.fetchPlugin(ctx, i, p, plan.workDir)
		if err != nil {
			problem("PluginError", "plugin %s: %v", p.Source, err)
			continue
		}
		sk, probs := skills.LoadDir(filepath.Join(dir, "skills"), skills.SourcePlugin)
		pluginSkills = append(pluginSkills, sk)
		for _, pr := range probs {
			problem("SkillLoadError", "plugin %s: skill file %s: %s", p.Source, pr.File, pr.Error)
		}
		for _, f := range []string{filepath.Join(dir, "hooks", "hooks.json"), filepath.Join(dir, ".openhands", "hooks.json")} {
			cfg, err := hooks.LoadPath(f)
			if err != nil {
				problem("HookConfigError", "plugin %s: %v", p.Source, err)
				continue
			}
			if cfg != nil {
				hookCfgs = append(hookCfgs, cfg)
			}
		}
		if data, err := os.ReadFile(filepath.Join(dir, ".mcp.json")); err == nil {
			data = bytes.ReplaceAll(data, []byte("${SKILL_ROOT}"), jsonInner(dir))
			s, err := mcp.ParseConfig(data)
			if err != nil {
				problem("MCPConfigError", "plugin %s: .mcp.json: %v", p.Source, err)
			}
			maps.Copy(servers, s)
		} else if !errors.Is(err, os.ErrNotExist) {
			problem("PluginError", "plugin %s: read .mcp.json: %v", p.Source, err)
		}
	}

	// Skills, lowest precedence first.
	dirs := c.opts.SkillDirs
	var layers [][]skills.Skill
	load := func(dir, source string) {
		if dir == "" {
			return
		}
		var sk []skills.Skill
		var probs []skills.Problem
		if source == skills.SourceUser {
			sk, probs = skills.LoadUser(dir) // with the enabled installed skills
		} else {
			sk, probs = skills.LoadDir(dir, source)
		}
		layers = append(layers, sk)
		for _, pr := range probs {
			problem("SkillLoadError", "skill file %s: %s", pr.File, pr.Error)
		}
	}
	load(dirs.Sandbox, skills.SourceSandbox)
	if plan.ctx.LoadPublicSkills {
		load(dirs.Public, skills.SourcePublic)
	}
	if plan.ctx.LoadUserSkills {
		load(dirs.User, skills.SourceUser)
		load(dirs.Org, skills.SourceOrg)
	}
	layers = append(layers, pluginSkills...)
	if plan.ctx.LoadProjectSkills {
		load(plan.workDir, skills.SourceProject)
	}
	var inline []skills.Skill
	for _, raw := range plan.ctx.Skills {
		if sk, err := skills.ParseInline(raw); err == nil {
			inline = append(inline, sk)
		}
	}
	res.ext.skills = skills.Merge(append(layers, inline)...)

	// Hooks: the project's file, the request's config, then the plugins'.
	fileCfg, err := hooks.LoadFile(plan.workDir)
	if err != nil {
		problem("HookConfigError", "%v", err)
	}
	var reqCfg *hooks.Config
	if len(plan.hookCfg) > 0 && string(plan.hookCfg) != "null" {
		if reqCfg, err = hooks.Parse(plan.hookCfg); err != nil {
			problem("HookConfigError", "hook_config: %v", err)
		}
	}
	if cfg := hooks.Merge(append([]*hooks.Config{fileCfg, reqCfg}, hookCfgs...)...); cfg != nil && !cfg.Empty() {
		// The secrets are read at each run, so POST .../secrets reaches
		// the hooks live.
		res.ext.hooks = &hooks.Runner{Config: cfg, WorkDir: plan.workDir,
			SessionID: c.id.String(), EnvFunc: c.SecretEnv, Mask: c.masker.Mask}
	}

	// MCP tool servers, placeholders filled from the secrets.
	if len(servers) == 0 {
		return
	}
	vals := maps.Clone(plan.secrets)
	maps.Copy(vals, res.secretVals)
	client, errs := mcp.Connect(ctx, servers, mcp.Options{ConnectTimeout: c.opts.MCPConnectTimeout,
		Lookup: func(name string) (string, bool) { v, ok := vals[name]; return v, ok },
		Mask:   c.masker.Mask, Logger: c.lg})
	for _, err := range errs {
		problem("MCPConnectionError", "%v", err)
	}
	res.ext.mcp = client
}

// jsonInner is s escaped for the inside of a JSON string.
func jsonInner(s string) []byte {
	b := strictjson.AppendString(nil, s)
	return b[1 : len(b)-1]
}

// fetchPlugin returns the plugin's directory: a local directory as is, a
// git source cloned (once) into the conversation's directory.
func (c *Conversation) fetchPlugin(ctx context.Context, i int, p agentwire.Plugin, workDir string) (string, error) {
	src := p.Source
	url := ""
	switch {
	case strings.HasPrefix(src, "github:"):
		url = "https://github.com/" + strings.TrimSuffix(strings.TrimPrefix(src, "github:"), ".git") + ".git"
	case strings.HasPrefix(src, "https://"), strings.HasPrefix(src, "http://"), strings.HasPrefix(src, "ssh://"),
		strings.HasPrefix(src, "git@"), strings.HasPrefix(src, "git://"):
		url = src
	case strings.HasPrefix(src, "file://"):
		src = strings.TrimPrefix(src, "file://")
		if p.Ref != nil {
			url = "file://" + src
		}
	}
	var dir string
	if url == "" {
		if !filepath.IsAbs(src) {
			src = filepath.Join(workDir, src)
		}
		st, err := os.Stat(src)
		if err != nil {
			return "", fmt.Errorf("source directory: %w", err)
		}
		if !st.IsDir() {
			return "", fmt.Errorf("source %s is not a directory", src)
		}
		dir = src
	} else {
		dir = filepath.Join(c.dir, "plugins", fmt.Sprint(i))
		if _, err := os.Stat(filepath.Join(dir, ".git")); err != nil {
			if err := gitClone(ctx, url, p.Ref, dir); err != nil {
				return "", err
			}
		}
	}
	if p.RepoPath != nil && *p.RepoPath != "" {
		sub, err := pathguard.Resolve([]string{dir}, filepath.Join(dir, *p.RepoPath))
		if err != nil {
			return "", fmt.Errorf("repo_path: %w", err)
		}
		dir = sub
	}
	return dir, nil
}

// gitClone makes a shallow clone of url (at ref) into dir.
func gitClone(ctx context.Context, url string, ref *string, dir string) error {
	ctx, cancel := context.WithTimeout(ctx, PluginFetchTimeout)
	defer cancel()
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return fmt.Errorf("clone: %w", err)
	}
	tmp := dir + ".tmp"
	os.RemoveAll(tmp)
	args := []string{"clone", "--quiet", "--depth", "1"}
	if ref != nil && *ref != "" {
		args = append(args, "--branch", *ref)
	}
	args = append(args, "--", url, tmp)
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Env = append(procenv.Environ(), "GIT_TERMINAL_PROMPT=0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		os.RemoveAll(tmp)
		msg := strings.TrimSpace(stderr.String())
		if ctx.Err() != nil {
			msg = "timed out after " + PluginFetchTimeout.String()
		}
		return fmt.Errorf("git clone failed: %s", msg)
	}
	return os.Rename(tmp, dir)
}
