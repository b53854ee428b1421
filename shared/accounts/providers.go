package accounts

import (
	"context"
	"sort"

	"github.com/acs-project/acs/shared/acs"
)

// ProviderTokenUpdate is one provider's token as posted: a nil or empty
// Token keeps the stored one (Host still applies).
type ProviderTokenUpdate struct {
	Token *string
	Host  *string
}

// SetProviderTokens makes tokens the user's git provider tokens (as
// OpenHands does, a provider not named is dropped; one named without a
// token keeps its stored token, and is dropped when it has none). Tokens
// are sealed; they are never returned.
func (s *Service) SetProviderTokens(ctx context.Context, userID string, tokens map[string]ProviderTokenUpdate) (acs.Settings, error) {
	st, _, err := s.Settings(ctx, userID)
	if err != nil {
		return acs.Settings{}, err
	}
	var out []acs.ProviderToken
	for p, u := range tokens {
		t := acs.ProviderToken{Provider: p}
		if old, ok := st.ProviderToken(p); ok {
			t = old
		}
		if u.Host != nil {
			t.Host = *u.Host
		}
		if u.Token != nil && *u.Token != "" {
			if t.Sealed, err = s.Sealer.Seal(*u.Token); err != nil {
				return acs.Settings{}, err
			}
		}
		if t.Sealed != "" {
			out = append(out, t)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Provider < out[j].Provider })
	st.ProviderTokens = out
	st.UpdatedAt = s.now()
	if err := s.Store.PutSettings(ctx, st); err != nil {
		return acs.Settings{}, err
	}
	return st, nil
}

// ProviderToken returns the user's token for provider (opened) and its
// host; acs.ErrUnauthorized-coded ("Git provider token required") when
// there is none.
func (s *Service) ProviderToken(ctx context.Context, userID, provider string) (token, host string, err error) {
	st, _, err := s.Settings(ctx, userID)
	if err != nil {
		return "", "", err
	}
	t, ok := st.ProviderToken(provider)
	if !ok {
		return "", "", acs.Errorf(acs.EUNAUTHORIZED, "Git provider token required (such as GitHub).")
	}
	v, err := s.Sealer.Open(t.Sealed)
	if err != nil {
		return "", "", acs.Errorf(acs.EUNAUTHORIZED, "The stored %s token does not open (was the key changed?); store it again.", provider)
	}
	return v, t.Host, nil
}
