package accounts

import (
	"context"
	"encoding/json"

	"github.com/acs-project/acs/shared/acs"
)

// ProfileInput is an LLM configuration to save as a profile: the fields
// ACS uses and the rest (Config, a JSON object without model, base_url
// and api_key) kept for the UI. APIKey nil keeps the profile's stored key.
type ProfileInput struct {
	Model, BaseURL *string
	APIKey         *string
	Config         json.RawMessage
}

// LLMProfiles returns the user's profiles and the active one's name.
func (s *Service) LLMProfiles(ctx context.Context, userID string) ([]acs.LLMProfile, string, error) {
	st, _, err := s.Settings(ctx, userID)
	return st.LLMProfiles, st.ActiveLLMProfile, err
}

// LLMProfile returns one of the user's profiles; acs.ErrNotFound-coded
// ("Profile 'name' not found") when there is none.
func (s *Service) LLMProfile(ctx context.Context, userID, name string) (acs.LLMProfile, error) {
	st, _, err := s.Settings(ctx, userID)
	if err != nil {
		return acs.LLMProfile{}, err
	}
	p, _, ok := st.Profile(name)
	if !ok {
		return acs.LLMProfile{}, profileNotFound(name)
	}
	return p, nil
}

func profileNotFound(name string) error {
	return acs.Errorf(acs.ENOTFOUND, "Profile '%s' not found", name)
}

// SaveLLMProfile creates or replaces the profile name: from in, or (in
// nil) from the user's current LLM settings. preserveKey keeps the
// profile's stored key; includeSecrets false saves it without a key. Saving
// over the active profile updates the LLM settings with it. It is
// acs.ErrConflict-coded at acs.MaxLLMProfiles.
func (s *Service) SaveLLMProfile(ctx context.Context, userID, name string, in *ProfileInput, includeSecrets, preserveKey bool) error {
	st, _, err := s.Settings(ctx, userID)
	if err != nil {
		return err
	}
	old, i, exists := st.Profile(name)
	p := acs.LLMProfile{Name: name}
	if in == nil {
		p.Model, p.BaseURL, p.APIKeySealed = st.LLMModel, st.LLMBaseURL, st.LLMAPIKeySealed
	} else {
		p.Model, p.BaseURL, p.Config = in.Model, in.BaseURL, in.Config
		switch {
		case in.APIKey != nil && *in.APIKey != "":
			if p.APIKeySealed, err = s.Sealer.Seal(*in.APIKey); err != nil {
				return err
			}
		case exists:
			p.APIKeySealed = old.APIKeySealed
		}
	}
	if preserveKey && exists {
		p.APIKeySealed = old.APIKeySealed
	}
	if !includeSecrets {
		p.APIKeySealed = ""
	}
	if exists {
		st.LLMProfiles[i] = p
	} else {
		if len(st.LLMProfiles) >= acs.MaxLLMProfiles {
			return acs.Errorf(acs.ECONFLICT, "At most %d LLM profiles; delete one first", acs.MaxLLMProfiles)
		}
		st.LLMProfiles = append(st.LLMProfiles, p)
	}
	if st.ActiveLLMProfile == name {
		st.LLMModel, st.LLMBaseURL, st.LLMAPIKeySealed = p.Model, p.BaseURL, p.APIKeySealed
	}
	st.UpdatedAt = s.now()
	return s.Store.PutSettings(ctx, st)
}

// ActivateLLMProfile makes the profile name the user's LLM settings (the
// model, base URL and key new conversations use) and returns it;
// acs.ErrNotFound-coded when there is none.
func (s *Service) ActivateLLMProfile(ctx context.Context, userID, name string) (acs.LLMProfile, error) {
	st, _, err := s.Settings(ctx, userID)
	if err != nil {
		return acs.LLMProfile{}, err
	}
	p, _, ok := st.Profile(name)
	if !ok {
		return acs.LLMProfile{}, profileNotFound(name)
	}
	st.LLMModel, st.LLMBaseURL, st.LLMAPIKeySealed, st.ActiveLLMProfile = p.Model, p.BaseURL, p.APIKeySealed, name
	st.UpdatedAt = s.now()
	return p, s.Store.PutSettings(ctx, st)
}

// DeleteLLMProfile deletes the profile name (no error when there is none).
// Deleting the active profile activates the first remaining one, if any.
func (s *Service) DeleteLLMProfile(ctx context.Context, userID, name string) error {
	st, saved, err := s.Settings(ctx, userID)
	if err != nil || !saved {
		return err
	}
	_, i, ok := st.Profile(name)
	if !ok {
		return nil
	}
	st.LLMProfiles = append(st.LLMProfiles[:i:i], st.LLMProfiles[i+1:]...)
	if st.ActiveLLMProfile == name {
		st.ActiveLLMProfile = ""
		if len(st.LLMProfiles) > 0 {
			p := st.LLMProfiles[0]
			st.LLMModel, st.LLMBaseURL, st.LLMAPIKeySealed, st.ActiveLLMProfile = p.Model, p.BaseURL, p.APIKeySealed, p.Name
		}
	}
	st.UpdatedAt = s.now()
	return s.Store.PutSettings(ctx, st)
}

// RenameLLMProfile renames the profile name to newName, keeping its key
// and whether it is active; acs.ErrNotFound-coded when there is none,
// acs.ErrConflict-coded when another profile has newName.
func (s *Service) RenameLLMProfile(ctx context.Context, userID, name, newName string) error {
	st, _, err := s.Settings(ctx, userID)
	if err != nil {
		return err
	}
	_, i, ok := st.Profile(name)
	if !ok {
		return profileNotFound(name)
	}
	if newName == name {
		return nil
	}
	if _, _, taken := st.Profile(newName); taken {
		return acs.Errorf(acs.ECONFLICT, "Profile '%s' already exists", newName)
	}
	st.LLMProfiles[i].Name = newName
	if st.ActiveLLMProfile == name {
		st.ActiveLLMProfile = newName
	}
	st.UpdatedAt = s.now()
	return s.Store.PutSettings(ctx, st)
}
