package accounts

import (
	"context"
	"errors"

	"github.com/acs-project/acs/shared/acs"
)

// A user's stored secrets reach every conversation they start (a start
// request's own secrets win on a name clash). Values are sealed at rest and
// never returned.

// Secrets lists the user's secrets (sealed values).
func (s *Service) Secrets(ctx context.Context, ownerID string) ([]acs.Secret, error) {
	return s.Store.ListSecrets(ctx, ownerID)
}

// CreateSecret seals value and stores it as the user's secret name. It wraps
// acs.ErrConflict when the user has a secret of that name.
func (s *Service) CreateSecret(ctx context.Context, ownerID, name, value string, description *string) (acs.Secret, error) {
	if _, err := s.Store.GetSecret(ctx, ownerID, name); err == nil {
		return acs.Secret{}, acs.Errorf(acs.ECONFLICT, "A secret named %s exists; update it with %s", name, acs.RouteUpdateSecret.Ref(name))
	} else if !errors.Is(err, acs.ErrNotFound) {
		return acs.Secret{}, err
	}
	sealed, err := s.Sealer.Seal(value)
	if err != nil {
		return acs.Secret{}, err
	}
	now := s.now()
	sec := acs.Secret{OwnerID: ownerID, Name: name, Sealed: sealed, CreatedAt: now, UpdatedAt: now}
	if description != nil {
		sec.Description = *description
	}
	if err := s.Store.PutSecret(ctx, sec); err != nil {
		return acs.Secret{}, err
	}
	return sec, nil
}

// Secret returns the user's secret name; acs.ErrNotFound ("Secret not
// found: <name>") when there is none.
func (s *Service) Secret(ctx context.Context, ownerID, name string) (acs.Secret, error) {
	sec, err := s.Store.GetSecret(ctx, ownerID, name)
	if errors.Is(err, acs.ErrNotFound) {
		return sec, acs.Errorf(acs.ENOTFOUND, "Secret not found: %s", name)
	}
	return sec, err
}

// UpdateSecret replaces the value (sealed) and/or the description of sec,
// a secret read by Secret, and stores it.
func (s *Service) UpdateSecret(ctx context.Context, sec acs.Secret, value, description *string) (acs.Secret, error) {
	if value != nil {
		sealed, err := s.Sealer.Seal(*value)
		if err != nil {
			return acs.Secret{}, err
		}
		sec.Sealed = sealed
	}
	if description != nil {
		sec.Description = *description
	}
	sec.UpdatedAt = s.now()
	if err := s.Store.PutSecret(ctx, sec); err != nil {
		return acs.Secret{}, err
	}
	return sec, nil
}

// DeleteSecret removes sec, a secret read by Secret.
func (s *Service) DeleteSecret(ctx context.Context, sec acs.Secret) error {
	return s.Store.DeleteSecret(ctx, sec.OwnerID, sec.Name)
}
