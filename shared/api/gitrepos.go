package api

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/acs-project/acs/events/strictjson"
	"github.com/acs-project/acs/internal/httpjson"
	"github.com/acs-project/acs/shared/v1wire"
)

// The repository picker: the user's repositories, branches and app
// installations at their git provider, with their stored token
// (POST /api/v1/secrets/git-providers). page_id is the next page's number.

// gitPage reads provider (required), limit and page_id.
func gitPage(q *httpjson.Query, def int) (provider string, page, limit int) {
	provider = ""
	if q.Require("provider") {
		provider = q.Enum("provider", "", v1wire.GitProviders)
	}
	limit = q.Int("limit", def, 1, 100)
	page = q.Int("page_id", 1, 1, 1<<20)
	return provider, page, limit
}

func nextPage(page int, more bool) string {
	if !more {
		return ""
	}
	return strconv.Itoa(page + 1)
}

// searchGitRepositories: GET /api/v1/git/repositories/search.
func (a *API) searchGitRepositories(w http.ResponseWriter, r *http.Request) {
	q := httpjson.NewQuery(r)
	provider, page, limit := gitPage(q, 100)
	query, installation := "", ""
	if s := q.String("query"); s != nil {
		query = strings.TrimSpace(*s)
	}
	if s := q.String("installation_id"); s != nil {
		installation = *s
	}
	sortOrder := q.Enum("sort_order", "stars-desc", []string{"stars-desc", "stars-asc", "forks-desc", "forks-asc", "updated-desc", "updated-asc", "desc", "asc"})
	if !q.OK(w) {
		return
	}
	sort, order, ok := strings.Cut(sortOrder, "-")
	if !ok { // the frontend's bare "desc"/"asc" (most recently pushed first)
		sort, order = "updated", sort
	}
	repos, err := a.git.Repositories(r.Context(), userOf(r).ID, provider, query, installation, sort, order, page, limit+1)
	if err != nil {
		writeErr(w, err)
		return
	}
	more := len(repos) > limit
	if more {
		repos = repos[:limit]
	}
	items := make([]v1wire.Repository, 0, len(repos))
	for _, rp := range repos {
		item := v1wire.Repository{ID: rp.ID, FullName: rp.FullName, GitProvider: rp.Provider, IsPublic: rp.Public,
			StargazersCount: &rp.Stars, OwnerType: &rp.OwnerType}
		if rp.PushedAt != "" {
			item.PushedAt = &rp.PushedAt
		}
		if rp.MainBranch != "" {
			item.MainBranch = &rp.MainBranch
		}
		items = append(items, item)
	}
	httpjson.WriteJSON(w, http.StatusOK, pageOf(items, nextPage(page, more)))
}

// searchGitBranches: GET /api/v1/git/branches/search (query filters by
// name, case-insensitively).
func (a *API) searchGitBranches(w http.ResponseWriter, r *http.Request) {
	q := httpjson.NewQuery(r)
	provider, page, limit := gitPage(q, 30)
	repo, query := "", ""
	if q.Require("repository") {
		repo = *q.String("repository")
	}
	if s := q.String("query"); s != nil {
		query = strings.ToLower(strings.TrimSpace(*s))
	}
	if !q.OK(w) {
		return
	}
	if msg := v1wire.RepositoryProblem(repo); msg != "" {
		httpjson.WriteValidation(w, strictjson.Errors{{Loc: []any{"query", "repository"}, Msg: msg, Type: "value_error"}})
		return
	}
	var items []v1wire.Branch
	more := false
	if query == "" {
		branches, err := a.git.Branches(r.Context(), userOf(r).ID, provider, repo, page, limit+1)
		if err != nil {
			writeErr(w, err)
			return
		}
		if more = len(branches) > limit; more {
			branches = branches[:limit]
		}
		for _, b := range branches {
			items = append(items, v1wire.Branch{Name: b.Name, CommitSHA: b.CommitSHA, Protected: b.Protected})
		}
	} else {
		// GitHub's REST API has no branch search: filter its pages (up to
		// 10 of 100), then page the matches.
		var all []v1wire.Branch
		for p := 1; p <= 10; p++ {
			branches, err := a.git.Branches(r.Context(), userOf(r).ID, provider, repo, p, 100)
			if err != nil {
				writeErr(w, err)
				return
			}
			for _, b := range branches {
				if strings.Contains(strings.ToLower(b.Name), query) {
					all = append(all, v1wire.Branch{Name: b.Name, CommitSHA: b.CommitSHA, Protected: b.Protected})
				}
			}
			if len(branches) < 100 {
				break
			}
		}
		lo := min((page-1)*limit, len(all))
		hi := min(lo+limit, len(all))
		items, more = all[lo:hi], hi < len(all)
	}
	httpjson.WriteJSON(w, http.StatusOK, pageOf(items, nextPage(page, more)))
}

// searchGitInstallations: GET /api/v1/git/installations/search.
func (a *API) searchGitInstallations(w http.ResponseWriter, r *http.Request) {
	q := httpjson.NewQuery(r)
	provider, page, limit := gitPage(q, 100)
	if !q.OK(w) {
		return
	}
	ids, err := a.git.Installations(r.Context(), userOf(r).ID, provider)
	if err != nil {
		writeErr(w, err)
		return
	}
	lo := min((page-1)*limit, len(ids))
	hi := min(lo+limit, len(ids))
	httpjson.WriteJSON(w, http.StatusOK, pageOf(ids[lo:hi], nextPage(page, hi < len(ids))))
}
