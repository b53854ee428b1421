package hooks

// Request is the body of the agent server's POST /api/hooks, decoded with
// strictjson (project_dir is required; unknown keys are rejected).
type Request struct {
	ProjectDir string `json:"project_dir" acs:"required"`
}

// Response is the body POST /api/hooks returns: the project's hook
// configuration, or null when it has none.
type Response struct {
	HookConfig *Config `json:"hook_config" acs:"emitnull"`
}
