// Package gitrepos lists a user's repositories, branches and app
// installations at their git provider, for the OpenHands frontend's
// repository picker. It speaks GitHub's REST API at the configured git
// host (ACS_GIT_HOST: https://github.com means https://api.github.com,
// another host its GitHub Enterprise API under /api/v3) with the user's
// stored token, which it sends only to that API and never puts in an
// error, a log or an answer.
package gitrepos

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/acs-project/acs/shared/acs"
)

// Repository is one repository (OpenHands' Repository fields).
type Repository struct {
	ID, FullName, Provider string
	Public                 bool
	Stars                  int
	PushedAt               string
	OwnerType              string // "user" or "organization"
	MainBranch             string
}

// Branch is one branch.
type Branch struct {
	Name, CommitSHA string
	Protected       bool
}

// GitHub is a client of the GitHub REST API for one token.
type GitHub struct {
	// Host is the git host (ACS_GIT_HOST).
	Host  string
	Token string
	// HTTP is the client (a 30 s timeout one when nil).
	HTTP *http.Client
}

// APIBase is the REST API root of a git host.
func APIBase(host string) string {
	h := strings.TrimRight(host, "/")
	if u, err := url.Parse(h); err == nil && (u.Host == "github.com" || u.Host == "www.github.com") {
		return u.Scheme + "://api.github.com"
	}
	return h + "/api/v3"
}

func (g *GitHub) get(ctx context.Context, path string, q url.Values, out any) error {
	u := APIBase(g.Host) + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return fmt.Errorf("build the GitHub request: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+g.Token)
	req.Header.Set("Accept", "application/vnd.github+json")
	req.Header.Set("X-GitHub-Api-Version", "2022-11-28")
	c := g.HTTP
	if c == nil {
		c = &http.Client{Timeout: 30 * time.Second}
	}
	res, err := c.Do(req)
	if err != nil {
		return acs.Errorf(acs.EUPSTREAM, "GitHub at %s is not reachable", g.Host)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(res.Body, 8<<20))
	switch {
	case res.StatusCode == http.StatusUnauthorized:
		return acs.Errorf(acs.EUPSTREAM, "GitHub refused the stored token (401); store a valid one")
	case res.StatusCode == http.StatusNotFound:
		return acs.Errorf(acs.ENOTFOUND, "GitHub has no %s (or the token cannot see it)", path)
	case res.StatusCode >= 300:
		return acs.Errorf(acs.EUPSTREAM, "GitHub answered %d to %s", res.StatusCode, path)
	}
	if err := json.Unmarshal(body, out); err != nil {
		return acs.Errorf(acs.EUPSTREAM, "GitHub's answer to %s does not decode", path)
	}
	return nil
}

type ghRepo struct {
	ID              int64  `json:"id"`
	FullName        string `json:"full_name"`
	Private         bool   `json:"private"`
	StargazersCount int    `json:"stargazers_count"`
	PushedAt        string `json:"pushed_at"`
	DefaultBranch   string `json:"default_branch"`
	Owner           struct {
		Type string `json:"type"`
	} `json:"owner"`
}

func (r ghRepo) repo() Repository {
	owner := "user"
	if r.Owner.Type == "Organization" {
		owner = "organization"
	}
	return Repository{ID: strconv.FormatInt(r.ID, 10), FullName: r.FullName, Provider: "github", Public: !r.Private,
		Stars: r.StargazersCount, PushedAt: r.PushedAt, OwnerType: owner, MainBranch: r.DefaultBranch}
}

func pageQuery(page, perPage int) url.Values {
	return url.Values{"page": {strconv.Itoa(page)}, "per_page": {strconv.Itoa(perPage)}}
}

// UserRepositories lists the token's repositories, most recently pushed
// first (page from 1), or those of one app installation.
func (g *GitHub) UserRepositories(ctx context.Context, installationID string, page, perPage int) ([]Repository, error) {
	var list []ghRepo
	if installationID != "" {
		var out struct {
			Repositories []ghRepo `json:"repositories"`
		}
		if err := g.get(ctx, "/user/installations/"+url.PathEscape(installationID)+"/repositories", pageQuery(page, perPage), &out); err != nil {
			return nil, err
		}
		list = out.Repositories
	} else {
		q := pageQuery(page, perPage)
		q.Set("sort", "pushed")
		if err := g.get(ctx, "/user/repos", q, &list); err != nil {
			return nil, err
		}
	}
	out := make([]Repository, 0, len(list))
	for _, r := range list {
		out = append(out, r.repo())
	}
	return out, nil
}

// SearchRepositories searches repositories by query, sorted by sort
// (stars, forks, updated) in order (asc, desc).
func (g *GitHub) SearchRepositories(ctx context.Context, query, sort, order string, page, perPage int) ([]Repository, error) {
	q := pageQuery(page, perPage)
	q.Set("q", query)
	q.Set("sort", sort)
	q.Set("order", order)
	var res struct {
		Items []ghRepo `json:"items"`
	}
	if err := g.get(ctx, "/search/repositories", q, &res); err != nil {
		return nil, err
	}
	out := make([]Repository, 0, len(res.Items))
	for _, r := range res.Items {
		out = append(out, r.repo())
	}
	return out, nil
}

// Branches lists a repository's branches (page from 1).
func (g *GitHub) Branches(ctx context.Context, repo string, page, perPage int) ([]Branch, error) {
	owner, name, ok := strings.Cut(repo, "/")
	if !ok || owner == "" || name == "" || strings.Contains(name, "/") {
		return nil, acs.Errorf(acs.EINVALID, "repository must be owner/name")
	}
	var list []struct {
		Name   string `json:"name"`
		Commit struct {
			SHA string `json:"sha"`
		} `json:"commit"`
		Protected bool `json:"protected"`
	}
	if err := g.get(ctx, "/repos/"+url.PathEscape(owner)+"/"+url.PathEscape(name)+"/branches", pageQuery(page, perPage), &list); err != nil {
		return nil, err
	}
	out := make([]Branch, 0, len(list))
	for _, b := range list {
		out = append(out, Branch{Name: b.Name, CommitSHA: b.Commit.SHA, Protected: b.Protected})
	}
	return out, nil
}

// Installations lists the ids of the GitHub App installations the token
// can use (none for a personal access token).
func (g *GitHub) Installations(ctx context.Context) ([]string, error) {
	var res struct {
		Installations []struct {
			ID int64 `json:"id"`
		} `json:"installations"`
	}
	if err := g.get(ctx, "/user/installations", url.Values{"per_page": {"100"}}, &res); err != nil {
		if acs.ErrorCode(err) == acs.ENOTFOUND {
			return []string{}, nil
		}
		return nil, err
	}
	out := make([]string, 0, len(res.Installations))
	for _, i := range res.Installations {
		out = append(out, strconv.FormatInt(i.ID, 10))
	}
	return out, nil
}
