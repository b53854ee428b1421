// Package llm is the agent's client for any OpenAI-compatible chat
// completions endpoint: message and tool conversion, retries with backoff
// for transient errors, error classification, streaming deltas, usage, cost
// and token ids. It speaks the Chat Completions wire format itself, over
// net/http (openai.go).
package llm

import "github.com/acs-project/acs/sandbox/agentwire/llmconfig"

// Config is the agent's "llm" object (see llmconfig).
type Config = llmconfig.Config

// Redacted is the value secrets are replaced with in API output.
const Redacted = llmconfig.Redacted

// DefaultConfig returns a Config with every default applied (as decoding
// "{}" gives), for building agent configurations in code.
func DefaultConfig() Config { return llmconfig.Default() }
