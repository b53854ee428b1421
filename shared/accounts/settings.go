package accounts

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/acs-project/acs/shared/acs"
)

// Settings returns the user's settings and whether they were ever saved (the
// defaults when not).
func (s *Service) Settings(ctx context.Context, userID string) (acs.Settings, bool, error) {
	st, err := s.Store.GetSettings(ctx, userID)
	if errors.Is(err, acs.ErrNotFound) {
		return acs.DefaultSettings(userID), false, nil
	}
	return st, err == nil, err
}

// UpdateSettings applies u to the user's settings and stores them; it
// returns the settings as saved.
func (s *Service) UpdateSettings(ctx context.Context, userID string, u acs.SettingsUpdate) (acs.Settings, error) {
	st, _, err := s.Settings(ctx, userID)
	if err != nil {
		return acs.Settings{}, err
	}
	if u.SandboxGroupingStrategy != nil {
		st.SandboxGroupingStrategy = *u.SandboxGroupingStrategy
	}
	if u.LLMModel.Set {
		st.LLMModel = u.LLMModel.Value
	}
	if u.LLMBaseURL.Set {
		st.LLMBaseURL = u.LLMBaseURL.Value
	}
	if u.LLMAPIKey.Set {
		st.LLMAPIKeySealed = ""
		if u.LLMAPIKey.Value != nil {
			sealed, err := s.Sealer.Seal(*u.LLMAPIKey.Value)
			if err != nil {
				return acs.Settings{}, err
			}
			st.LLMAPIKeySealed = sealed
		}
	}
	if u.ConfirmationPolicySet {
		st.ConfirmationPolicy = u.ConfirmationPolicy
	}
	if u.MaxConversationsPerSandbox != nil {
		st.MaxConversationsPerSandbox = *u.MaxConversationsPerSandbox
	}
	if err := s.applyUI(&st, u); err != nil {
		return acs.Settings{}, err
	}
	if u.LLMModel.Set || u.LLMBaseURL.Set || u.LLMAPIKey.Set {
		reconcileActiveProfile(&st)
	}
	st.UpdatedAt = s.now()
	if err := s.Store.PutSettings(ctx, st); err != nil {
		return acs.Settings{}, err
	}
	return st, nil
}

// applyUI applies the web frontend's fields of u to st.
func (s *Service) applyUI(st *acs.Settings, u acs.SettingsUpdate) error {
	for k, v := range u.UI {
		if string(v) == "null" {
			delete(st.UI, k)
			continue
		}
		if st.UI == nil {
			st.UI = map[string]json.RawMessage{}
		}
		st.UI[k] = v
	}
	var err error
	if st.AgentSettings, err = applyObject(st.AgentSettings, u.AgentSettings, u.AgentSettingsDiff); err != nil {
		return err
	}
	st.AgentSettings = withoutLLMSecrets(st.AgentSettings)
	if st.ConversationSettings, err = applyObject(st.ConversationSettings, u.ConversationSettings, u.ConversationSettingsDiff); err != nil {
		return err
	}
	if u.SearchAPIKey.Set {
		st.SearchAPIKeySealed = ""
		if u.SearchAPIKey.Value != nil && *u.SearchAPIKey.Value != "" {
			if st.SearchAPIKeySealed, err = s.Sealer.Seal(*u.SearchAPIKey.Value); err != nil {
				return err
			}
		}
	}
	return nil
}

// applyObject merges set (when given; null clears cur first) and then
// diff into cur: a page of the frontend that saves only its own keys never
// drops another page's.
func applyObject(cur json.RawMessage, set acs.JSONField, diff json.RawMessage) (json.RawMessage, error) {
	if set.Set && string(set.Value) == "null" {
		cur = nil
	} else if set.Set {
		var err error
		if cur, err = mergeObject(cur, set.Value); err != nil {
			return nil, err
		}
	}
	return mergeObject(cur, diff)
}

// mergeObject merges the JSON object diff into cur (RFC 7386).
func mergeObject(cur, diff json.RawMessage) (json.RawMessage, error) {
	if len(diff) == 0 || string(diff) == "null" {
		return cur, nil
	}
	var target, patch map[string]any
	if len(cur) > 0 {
		if err := json.Unmarshal(cur, &target); err != nil {
			return nil, fmt.Errorf("read stored settings object: %w", err)
		}
	}
	if err := json.Unmarshal(diff, &patch); err != nil {
		return nil, acs.Errorf(acs.EINVALID, "settings diff must be a JSON object")
	}
	out, err := json.Marshal(MergePatch(target, patch))
	if err != nil {
		return nil, fmt.Errorf("encode settings object: %w", err)
	}
	return out, nil
}

// MergePatch applies patch to target as RFC 7386 describes (null removes a
// key; objects merge recursively; anything else replaces) and returns the
// result (target is modified).
func MergePatch(target, patch map[string]any) map[string]any {
	if target == nil {
		target = map[string]any{}
	}
	for k, pv := range patch {
		switch pv := pv.(type) {
		case nil:
			delete(target, k)
		case map[string]any:
			tv, _ := target[k].(map[string]any)
			target[k] = MergePatch(tv, pv)
		default:
			target[k] = pv
		}
	}
	return target
}

// withoutLLMSecrets drops llm.model, llm.base_url and llm.api_key from
// agent settings (ACS keeps them in their own, sealed, fields).
func withoutLLMSecrets(agent json.RawMessage) json.RawMessage {
	if len(agent) == 0 {
		return agent
	}
	var m map[string]any
	if json.Unmarshal(agent, &m) != nil {
		return agent
	}
	if llm, ok := m["llm"].(map[string]any); ok {
		delete(llm, "model")
		delete(llm, "base_url")
		delete(llm, "api_key")
	}
	out, err := json.Marshal(m)
	if err != nil {
		return agent
	}
	return out
}

// reconcileActiveProfile clears the active profile when the LLM settings
// no longer match it.
func reconcileActiveProfile(st *acs.Settings) {
	if st.ActiveLLMProfile == "" {
		return
	}
	p, _, ok := st.Profile(st.ActiveLLMProfile)
	if !ok || !sameString(p.Model, st.LLMModel) || !sameString(p.BaseURL, st.LLMBaseURL) || p.APIKeySealed != st.LLMAPIKeySealed {
		st.ActiveLLMProfile = ""
	}
}

func sameString(a, b *string) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b
}
