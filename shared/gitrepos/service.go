package gitrepos

import (
	"context"
	"net/http"

	"github.com/acs-project/acs/shared/acs"
)

// Service answers the repository picker for a user with their stored
// token.
type Service struct {
	// Token returns the user's token for a provider (EUNAUTHORIZED-coded
	// when they have none).
	Token func(ctx context.Context, userID, provider string) (token, host string, err error)
	// Host is the git host (ACS_GIT_HOST).
	Host string
	HTTP *http.Client
}

func (s *Service) client(ctx context.Context, userID, provider string) (*GitHub, error) {
	if provider != "github" {
		return nil, acs.Errorf(acs.EINVALID, "Provider %s is not supported: ACS lists repositories of GitHub (ACS_GIT_HOST)", provider)
	}
	tok, _, err := s.Token(ctx, userID, provider)
	if err != nil {
		return nil, err
	}
	return &GitHub{Host: s.Host, Token: tok, HTTP: s.HTTP}, nil
}

// Repositories lists (query "") or searches the user's repositories at
// provider; page counts from 1. sortOrder is OpenHands' "stars-desc" form
// ("" for stars-desc), for searches only.
func (s *Service) Repositories(ctx context.Context, userID, provider, query, installationID, sort, order string, page, perPage int) ([]Repository, error) {
	g, err := s.client(ctx, userID, provider)
	if err != nil {
		return nil, err
	}
	if query != "" {
		return g.SearchRepositories(ctx, query, sort, order, page, perPage)
	}
	return g.UserRepositories(ctx, installationID, page, perPage)
}

// Branches lists a repository's branches whose name contains query.
func (s *Service) Branches(ctx context.Context, userID, provider, repo string, page, perPage int) ([]Branch, error) {
	g, err := s.client(ctx, userID, provider)
	if err != nil {
		return nil, err
	}
	return g.Branches(ctx, repo, page, perPage)
}

// Installations lists the user's app installation ids at provider.
func (s *Service) Installations(ctx context.Context, userID, provider string) ([]string, error) {
	g, err := s.client(ctx, userID, provider)
	if err != nil {
		return nil, err
	}
	return g.Installations(ctx)
}
