// Package llmconfig is the agent's LLM configuration (the OpenHands "llm"
// object): one of the agent server's wire types (the start request's
// agent.llm), apart from the LLM client so that the control plane can carry
// it without linking the client.
package llmconfig

import (
	"encoding/json"
	"math"
	"net/url"
	"strings"
	"time"

	"github.com/acs-project/acs/events/strictjson"
)

// Config is the agent's "llm" object (the OpenHands LLM configuration).
// Unknown keys are rejected when it is decoded with strictjson.
type Config struct {
	Model                  string          `json:"model" acs:"default=gpt-4o"`
	APIKey                 *string         `json:"api_key"`
	BaseURL                *string         `json:"base_url"`
	APIVersion             *string         `json:"api_version"`
	AWSAccessKeyID         *string         `json:"aws_access_key_id"`
	AWSSecretAccessKey     *string         `json:"aws_secret_access_key"`
	AWSSessionToken        *string         `json:"aws_session_token"`
	AWSRegionName          *string         `json:"aws_region_name"`
	OpenRouterSiteURL      *string         `json:"openrouter_site_url"`
	OpenRouterAppName      *string         `json:"openrouter_app_name"`
	UsageID                string          `json:"usage_id" acs:"default=default"`
	NumRetries             int             `json:"num_retries" acs:"default=5,ge=0"`
	RetryMultiplier        float64         `json:"retry_multiplier" acs:"default=8,ge=0"`
	RetryMinWait           float64         `json:"retry_min_wait" acs:"default=8,ge=0"`
	RetryMaxWait           float64         `json:"retry_max_wait" acs:"default=64,ge=0"`
	Timeout                *float64        `json:"timeout" acs:"ge=0"`
	MaxMessageChars        *int            `json:"max_message_chars" acs:"ge=1"`
	Temperature            *float64        `json:"temperature" acs:"ge=0"`
	TopP                   *float64        `json:"top_p" acs:"ge=0,le=1"`
	TopK                   *float64        `json:"top_k" acs:"ge=0"`
	CustomLLMProvider      *string         `json:"custom_llm_provider"`
	MaxInputTokens         *int            `json:"max_input_tokens" acs:"ge=1"`
	MaxOutputTokens        *int            `json:"max_output_tokens" acs:"ge=1"`
	ModelCanonicalName     *string         `json:"model_canonical_name"`
	ExtraHeaders           json.RawMessage `json:"extra_headers" acs:"object,nullable"`
	InputCostPerToken      *float64        `json:"input_cost_per_token" acs:"ge=0"`
	OutputCostPerToken     *float64        `json:"output_cost_per_token" acs:"ge=0"`
	OllamaBaseURL          *string         `json:"ollama_base_url"`
	APIMode                *string         `json:"api_mode"`
	Stream                 bool            `json:"stream"`
	DropParams             bool            `json:"drop_params" acs:"default=true"`
	ModifyParams           bool            `json:"modify_params" acs:"default=true"`
	DisableVision          *bool           `json:"disable_vision"`
	DisableStopWord        *bool           `json:"disable_stop_word"`
	CachingPrompt          bool            `json:"caching_prompt" acs:"default=true"`
	LogCompletions         bool            `json:"log_completions"`
	LogCompletionsFolder   *string         `json:"log_completions_folder"`
	CustomTokenizer        *string         `json:"custom_tokenizer"`
	NativeToolCalling      *bool           `json:"native_tool_calling"`
	ForceStringSerializer  *bool           `json:"force_string_serializer"`
	ReasoningEffort        *string         `json:"reasoning_effort"`
	ReasoningSummary       *string         `json:"reasoning_summary"`
	EnableEncryptedReason  *bool           `json:"enable_encrypted_reasoning"`
	PromptCacheRetention   *string         `json:"prompt_cache_retention"`
	ExtendedThinkingBudget *int            `json:"extended_thinking_budget" acs:"ge=0"`
	Seed                   *int            `json:"seed"`
	SafetySettings         json.RawMessage `json:"safety_settings" acs:"nullable"`
	LiteLLMExtraBody       json.RawMessage `json:"litellm_extra_body" acs:"object,nullable"`
	FallbackStrategy       json.RawMessage `json:"fallback_strategy" acs:"nullable"`
	Metadata               json.RawMessage `json:"metadata" acs:"object,nullable"`
	MaxBudgetPerTask       *float64        `json:"max_budget_per_task" acs:"ge=0"`
}

// ValidateStrict checks that base_url and ollama_base_url, when not empty,
// are http or https URLs with a host: the client sends the LLM key there.
func (c *Config) ValidateStrict() []strictjson.Error {
	var errs []strictjson.Error
	for _, f := range []struct {
		name string
		v    *string
	}{{"base_url", c.BaseURL}, {"ollama_base_url", c.OllamaBaseURL}} {
		if f.v != nil && *f.v != "" && !HTTPURL(*f.v) {
			errs = append(errs, strictjson.Error{Loc: []any{f.name}, Msg: f.name + " must be an http(s) URL", Type: "url_parsing"})
		}
	}
	return errs
}

// HTTPURL reports whether s is an absolute http or https URL with a host.
func HTTPURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// Redacted is the value secrets are replaced with in API output.
const Redacted = "**********"

// Redact returns a copy with secret fields replaced by "**********".
func (c Config) Redact() Config {
	r := func(p *string) *string {
		if p == nil {
			return nil
		}
		s := Redacted
		return &s
	}
	c.APIKey = r(c.APIKey)
	c.AWSAccessKeyID = r(c.AWSAccessKeyID)
	c.AWSSecretAccessKey = r(c.AWSSecretAccessKey)
	c.AWSSessionToken = r(c.AWSSessionToken)
	return c
}

// APIModel is the model name sent to the endpoint: the LiteLLM provider
// prefixes "openai/" and "litellm_proxy/" are removed, since the base URL
// already selects the provider.
func (c *Config) APIModel() string {
	m := c.Model
	for _, p := range []string{"litellm_proxy/", "openai/"} {
		if strings.HasPrefix(m, p) {
			return strings.TrimPrefix(m, p)
		}
	}
	return m
}

// Default returns a Config with every default applied (as decoding "{}"
// gives), for building agent configurations in code.
func Default() Config {
	var c Config
	if err := strictjson.Unmarshal([]byte("{}"), &c); err != nil {
		panic(err)
	}
	return c
}

// Backoff is the wait before retry number retry (1-based) of a failed LLM
// call: exponential from RetryMinWait by RetryMultiplier, capped at
// RetryMaxWait (a server's Retry-After may lengthen it).
func (c Config) Backoff(retry int) time.Duration {
	w := c.RetryMinWait * math.Pow(math.Max(c.RetryMultiplier, 1), float64(retry-1))
	w = math.Min(w, c.RetryMaxWait)
	return time.Duration(w * float64(time.Second))
}

// RetriesWithin is the largest number of retries whose backoff waits add
// up to at most total (0 when total is 0), at most 100.
func (c Config) RetriesWithin(total time.Duration) int {
	var sum time.Duration
	for n := 1; n <= 100; n++ {
		sum += c.Backoff(n)
		if sum > total {
			return n - 1
		}
	}
	return 100
}
