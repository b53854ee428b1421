package agent

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/acs-project/acs/sandbox/agentwire"
	"github.com/acs-project/acs/sandbox/atomicfile"
	"github.com/acs-project/acs/sandbox/llm"
	"github.com/acs-project/acs/sandbox/secrets"
	"github.com/acs-project/acs/sandbox/tools"
)

// Secret handling. A conversation's secrets are the request's secrets and
// the agent context's (the request's win on a name clash). Their values, and
// the LLM credentials, are:
//   - added to the server's Masker the moment they are known, so no event,
//     response, frame or log line carries them;
//   - exported into the terminal and the bash API's environment (names that
//     are valid variable names);
//   - sealed with the server's Cipher in meta.json, or left out of it when
//     the server has no key (the conversation then loses them on restart);
//   - never given to the LLM, which is told the names only.

// Secret schemes of meta.json.
const (
	schemePlain    = ""         // written before sealing existed
	schemeSealed   = "sealed"   // values sealed with the server's Cipher
	schemeRedacted = "redacted" // values left out (no key)
)

// SecretsError reports secrets that cannot be used as given (for example
// secrets_encrypted values that do not open with the server's key).
type SecretsError struct {
	Name string
	Err  error
}

func (e *SecretsError) Error() string { return fmt.Sprintf("secret %s: %v", e.Name, e.Err) }

func (e *SecretsError) Unwrap() error { return e.Err }

// mapSecretFields returns a copy of req in which f has rewritten every
// secret value: secret values and lookup headers, and the LLM credentials
// (of the agent and of the condenser). An error from f stops the walk.
func mapSecretFields(req agentwire.StartConversationRequest, f func(name, v string) (string, error)) (agentwire.StartConversationRequest, error) {
	var firstErr error
	fv := func(name, v string) string {
		if firstErr != nil || v == "" {
			return v
		}
		out, err := f(name, v)
		if err != nil {
			firstErr = err
			return v
		}
		return out
	}
	mapSources := func(in map[string]agentwire.SecretSource) map[string]agentwire.SecretSource {
		if in == nil {
			return nil
		}
		out := make(map[string]agentwire.SecretSource, len(in))
		for k, s := range in {
			s.Value = fv(k, s.Value)
			if s.Headers != nil {
				h := make(map[string]string, len(s.Headers))
				for hk, hv := range s.Headers {
					h[hk] = fv(k+" header "+hk, hv)
				}
				s.Headers = h
			}
			out[k] = s
		}
		return out
	}
	mapLLM := func(c llm.Config, what string) llm.Config {
		for _, p := range []**string{&c.APIKey, &c.AWSAccessKeyID, &c.AWSSecretAccessKey, &c.AWSSessionToken} {
			if *p != nil {
				v := fv(what, **p)
				*p = &v
			}
		}
		return c
	}
	req.Secrets = mapSources(req.Secrets)
	if req.Agent != nil {
		a := *req.Agent
		a.LLM = mapLLM(a.LLM, "llm")
		if a.AgentContext != nil {
			ac := *a.AgentContext
			ac.Secrets = mapSources(ac.Secrets)
			a.AgentContext = &ac
		}
		if a.Condenser != nil && a.Condenser.LLM != nil {
			cd := *a.Condenser
			l := mapLLM(*cd.LLM, "condenser llm")
			cd.LLM = &l
			a.Condenser = &cd
		}
		req.Agent = &a
	}
	return req, firstErr
}

// secretValues lists every secret value in req (static values, lookup
// headers, LLM credentials).
func secretValues(req agentwire.StartConversationRequest) []string {
	var out []string
	_, _ = mapSecretFields(req, func(_, v string) (string, error) {
		out = append(out, v)
		return v, nil
	})
	return out
}

// sealRequest prepares req for meta.json: values sealed with c, or emptied
// when there is no cipher.
func sealRequest(req agentwire.StartConversationRequest, c *secrets.Cipher) (agentwire.StartConversationRequest, string) {
	if c == nil {
		out, _ := mapSecretFields(req, func(string, string) (string, error) { return llm.Redacted, nil })
		return out, schemeRedacted
	}
	out, _ := mapSecretFields(req, func(_, v string) (string, error) { return c.Seal(v), nil })
	return out, schemeSealed
}

// unsealRequest reverses sealRequest. Values that do not open are dropped
// (returned as names in lost).
func unsealRequest(req agentwire.StartConversationRequest, scheme string, c *secrets.Cipher) (agentwire.StartConversationRequest, []string) {
	var lost []string
	switch scheme {
	case schemePlain:
		return req, nil
	case schemeRedacted:
		out, _ := mapSecretFields(req, func(name, v string) (string, error) {
			if v == llm.Redacted {
				lost = append(lost, name)
				return "", nil
			}
			return v, nil
		})
		return out, lost
	}
	out, _ := mapSecretFields(req, func(name, v string) (string, error) {
		if c == nil {
			lost = append(lost, name)
			return "", nil
		}
		plain, err := c.Open(v)
		if err != nil {
			lost = append(lost, name)
			return "", nil
		}
		return plain, nil
	})
	return out, lost
}

// openEncryptedRequest decrypts the values of a request sent with
// secrets_encrypted: every secret value must be sealed with the server's key.
func openEncryptedRequest(req agentwire.StartConversationRequest, c *secrets.Cipher) (agentwire.StartConversationRequest, error) {
	if req.SecretsEncrypted == nil || !*req.SecretsEncrypted {
		return req, nil
	}
	if c == nil {
		return req, &SecretsError{Name: "*", Err: errors.New("secrets_encrypted is set but the server has no OH_SECRET_KEY")}
	}
	open := func(in map[string]agentwire.SecretSource) (map[string]agentwire.SecretSource, error) {
		out := maps.Clone(in)
		for k, s := range out {
			if s.Kind == "LookupSecret" {
				continue
			}
			v, err := c.Open(s.Value)
			if err != nil {
				return nil, &SecretsError{Name: k, Err: err}
			}
			s.Value = v
			out[k] = s
		}
		return out, nil
	}
	var err error
	if req.Secrets, err = open(req.Secrets); err != nil {
		return req, err
	}
	if req.Agent != nil && req.Agent.AgentContext != nil && req.Agent.AgentContext.Secrets != nil {
		a, ac := *req.Agent, *req.Agent.AgentContext
		if ac.Secrets, err = open(ac.Secrets); err != nil {
			return req, err
		}
		a.AgentContext = &ac
		req.Agent = &a
	}
	f := false
	req.SecretsEncrypted = &f
	return req, nil
}

// TitleSecretError refuses a title that holds a secret's value. Names are
// the conversation's secrets found in it; none when the value is another
// one the server hides, such as an LLM key.
type TitleSecretError struct {
	Names []string
}

func (e *TitleSecretError) Error() string {
	if len(e.Names) == 0 {
		return TitleSecretMessage("")
	}
	return TitleSecretMessage(e.Names[0])
}

// TitleSecretMessage is the refusal of a title holding the value of secret
// name, worded as the control plane words it; "" names no secret.
func TitleSecretMessage(name string) string {
	if name == "" {
		return "the title contains a secret value; secret values may not appear in titles"
	}
	return fmt.Sprintf("the title contains the value of secret %s; secret values may not appear in titles", name)
}

// CheckTitle returns a *TitleSecretError when title holds the value of one
// of the conversation's secrets, or of any other value the server hides.
func (c *Conversation) CheckTitle(title string) error {
	return call(c, func() error { return c.checkTitle(title) })
}

func (c *Conversation) checkTitle(title string) error {
	var names []string
	for name, v := range c.secretVals {
		if len(v) >= secrets.MinLength && strings.Contains(title, v) {
			names = append(names, name)
		}
	}
	if len(names) == 0 && !c.masker.Contains([]byte(title)) {
		return nil
	}
	sort.Strings(names)
	return &TitleSecretError{Names: names}
}

// secretSources merges the agent context's secrets and the request's
// (which win).
func (c *Conversation) secretSources() map[string]agentwire.SecretSource {
	out := map[string]agentwire.SecretSource{}
	if ac := c.meta.Request.Agent.AgentContext; ac != nil {
		maps.Copy(out, ac.Secrets)
	}
	maps.Copy(out, c.meta.Request.Secrets)
	return out
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// SecretEnv returns the resolved secrets whose names are valid environment
// variable names, as sorted NAME=value entries (for the bash API).
func (c *Conversation) SecretEnv() []string {
	return call(c, func() []string { return c.secretEnv() })
}

func (c *Conversation) secretEnv() []string {
	out := make([]string, 0, len(c.secretVals))
	for k, v := range c.secretVals {
		if envName.MatchString(k) {
			out = append(out, k+"="+v)
		}
	}
	sort.Strings(out)
	return out
}

// Secret returns a resolved secret's value (for placeholder expansion).
func (c *Conversation) secret(name string) (string, bool) {
	v, ok := c.secretVals[name]
	return v, ok
}

// resolveStatic records the static secrets and masks every known
// value; it returns the lookup secrets still to fetch.
func (c *Conversation) resolveStatic() map[string]agentwire.SecretSource {
	c.masker.Add(secretValues(c.meta.Request)...)
	lookups := map[string]agentwire.SecretSource{}
	for name, s := range c.secretSources() {
		if s.Kind == "LookupSecret" {
			if _, done := c.secretVals[name]; !done {
				lookups[name] = s
			}
			continue
		}
		c.secretVals[name] = s.Value
	}
	return lookups
}

// lookupSecrets fetches lookup secrets concurrently (each bounded by
// secrets.LookupTimeout); values are masked before they are returned.
func (c *Conversation) lookupSecrets(ctx context.Context, srcs map[string]agentwire.SecretSource) (map[string]string, []string) {
	type result struct {
		name, value string
		err         error
	}
	ch := make(chan result, len(srcs))
	for name, s := range srcs {
		resolve := func() {
			v, err := secrets.Resolve(ctx, c.opts.HTTPClient, s)
			ch <- result{name, v, err}
		}
		if !c.goAsync(resolve) {
			ch <- result{name: name, err: ErrClosed}
		}
	}
	vals := map[string]string{}
	var problems []string
	for range srcs {
		r := <-ch
		if r.err != nil {
			problems = append(problems, fmt.Sprintf("secret %s is unavailable: %v", r.name, r.err))
			continue
		}
		c.masker.Add(r.value)
		vals[r.name] = r.value
	}
	slices.Sort(problems)
	return vals, problems
}

// export gives new secret values to the tools that run processes
// (the terminal) and records them.
func (c *Conversation) export(ctx context.Context, vals map[string]string) {
	for name, v := range vals {
		c.secretVals[name] = v
		if !envName.MatchString(name) {
			continue
		}
		for _, t := range c.kit.tools {
			if ex, ok := t.(tools.Exporter); ok {
				if err := ex.Export(ctx, name, v); err != nil {
					c.lg.Warn("export secret to tool", "tool", t.Name(), "secret", name, "error", err)
				}
			}
		}
	}
}

// UpdateSecrets adds or replaces secrets live: lookups are fetched, values
// masked from now on, exported to the terminal (before its next command) and
// persisted sealed. Values are never emitted; the secret_registry change is
// not an event (as in the reference). An unavailable lookup secret is an
// error naming it; the other secrets are still applied.
func (c *Conversation) UpdateSecrets(ctx context.Context, in map[string]agentwire.SecretSource) error {
	c.masker.Add(secretValues(agentwire.StartConversationRequest{Secrets: in})...)
	lookups := map[string]agentwire.SecretSource{}
	static := map[string]string{}
	for k, s := range in {
		if s.Kind == "LookupSecret" {
			lookups[k] = s
		} else {
			static[k] = s.Value
		}
	}
	fetched, problems := c.lookupSecrets(ctx, lookups)
	return call(c, func() error {
		if c.closed {
			return ErrClosed
		}
		if c.st.SystemPromptEmitted {
			// The system prompt named the secrets known then; the LLM hears of
			// new names with the next user message.
			known := c.secretNames()
			for k := range in {
				if !slices.Contains(known, k) && !slices.Contains(c.st.UnannouncedSecrets, k) {
					c.st.UnannouncedSecrets = append(c.st.UnannouncedSecrets, k)
				}
			}
			sort.Strings(c.st.UnannouncedSecrets)
			if err := c.saveState(); err != nil {
				return err
			}
		}
		if c.meta.Request.Secrets == nil {
			c.meta.Request.Secrets = map[string]agentwire.SecretSource{}
		}
		maps.Copy(c.meta.Request.Secrets, in)
		maps.Copy(static, fetched)
		c.export(ctx, static)
		if err := c.writeMeta(); err != nil {
			return err
		}
		c.onSecrets.notify()
		if len(problems) > 0 {
			return &SecretsError{Name: "lookup", Err: errors.New(strings.Join(problems, "; "))}
		}
		return nil
	})
}

// writeMeta persists meta.json with the secrets sealed.
func (c *Conversation) writeMeta() error {
	return c.putMeta(atomicfile.Write)
}

// createMeta writes the meta file of a conversation being created,
// unsynced (writeCreatedMeta): Create syncs it with the rest of the
// conversation's files (syncCreated).
func (c *Conversation) createMeta() error {
	return c.putMeta(writeCreatedMeta)
}

// putMeta writes the meta file, secrets sealed, with write.
func (c *Conversation) putMeta(write func(string, []byte, fs.FileMode) error) error {
	c.infoStale = true
	m := c.meta
	m.Request, m.SecretScheme = sealRequest(c.meta.Request, c.opts.Cipher)
	return writeJSONWith(write, c.path(metaFile), &m)
}
