package acs

import (
	"fmt"
	"sort"
	"strings"
)

// The secret-leak rule: a secret's value may not appear in a title or a
// message the control plane stores or passes on. Values shorter than
// minSecretLen bytes are neither checked nor masked, as on the agent
// server.

// minSecretLen is the shortest value the rule checks, in bytes.
const minSecretLen = 4

// SecretHidden stands for a secret's value wherever it is masked. It is the
// agent server's mark too.
const SecretHidden = "<secret-hidden>"

// SecretsIn names the secrets whose values appear in text, sorted.
func SecretsIn(text string, secrets map[string]string) []string {
	var names []string
	for name, v := range secrets {
		if len(v) >= minSecretLen && strings.Contains(text, v) {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names
}

// MaskSecrets replaces in text the value of every secret SecretsIn finds by
// SecretHidden. Where two values overlap, the longer one is masked.
func MaskSecrets(text string, secrets map[string]string) string {
	var found []string
	for _, v := range secrets {
		if len(v) >= minSecretLen && strings.Contains(text, v) {
			found = append(found, v)
		}
	}
	if len(found) == 0 {
		return text
	}
	// The replacer prefers the earlier of two values matching at one place.
	sort.Slice(found, func(i, j int) bool {
		if len(found[i]) != len(found[j]) {
			return len(found[i]) > len(found[j])
		}
		return found[i] < found[j]
	})
	pairs := make([]string, 0, 2*len(found))
	for _, v := range found {
		pairs = append(pairs, v, SecretHidden)
	}
	return strings.NewReplacer(pairs...).Replace(text)
}

// A Text is a text the secret-leak rule guards, as its refusal names it.
type Text string

// The guarded texts.
const (
	TitleText          Text = "the title"
	MessageText        Text = "the message"
	InitialMessageText Text = "the initial message"
)

// Refusal is the message refusing text t because it holds the value of
// secret name. A title may hold no secret's value; a message refers to the
// secret by its name instead.
func (t Text) Refusal(name string) string {
	if t == TitleText {
		return fmt.Sprintf("%s contains the value of secret %s; secret values may not appear in titles", t, name)
	}
	return fmt.Sprintf("%s contains the value of secret %s; refer to it by name instead", t, name)
}

// Leaks is one Refusal for each secret whose value text holds, in the
// order of SecretsIn.
func (t Text) Leaks(text string, secrets map[string]string) []string {
	names := SecretsIn(text, secrets)
	if len(names) == 0 {
		return nil
	}
	out := make([]string, len(names))
	for i, name := range names {
		out[i] = t.Refusal(name)
	}
	return out
}
