package accounts

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/acs-project/acs/shared/acs"
)

// Field is an optional, nullable field of a partial update: Set says
// whether it was given, a nil Value clears it.
type Field struct {
	Set   bool
	Value *string
}

// SettingsUpdate is a partial update of a user's settings (fields left
// unset are kept). Its values are already validated.
type SettingsUpdate struct {
	SandboxGroupingStrategy *acs.GroupingStrategy
	LLMModel                Field
	LLMBaseURL              Field
	// LLMAPIKey is sealed before it is stored; null clears it.
	LLMAPIKey Field
	// ConfirmationPolicySet says ConfirmationPolicy was given (nil clears).
	ConfirmationPolicySet      bool
	ConfirmationPolicy         json.RawMessage
	MaxConversationsPerSandbox *int
}

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
func (s *Service) UpdateSettings(ctx context.Context, userID string, u SettingsUpdate) (acs.Settings, error) {
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
	st.UpdatedAt = s.now()
	if err := s.Store.PutSettings(ctx, st); err != nil {
		return acs.Settings{}, err
	}
	return st, nil
}
