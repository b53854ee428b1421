package startflow_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/acs-project/acs/shared/accounts"
	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/boltstore"
	"github.com/acs-project/acs/shared/sealbox"
	"github.com/acs-project/acs/shared/startflow"
)

// TestMergeSecretsProviderTokens: a stored git provider token reaches a
// conversation as <PROVIDER>_TOKEN (what clones selected_repository); a
// stored secret of that name, then the start's own, win over it; another
// user's token never appears.
func TestMergeSecretsProviderTokens(t *testing.T) {
	ctx := context.Background()
	store, err := boltstore.Open(filepath.Join(t.TempDir(), "acs.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	sealer := sealbox.FromPassphrase("merge test")
	svc := accounts.New(store, sealer, nil)
	tok := func(v string) *string { return &v }
	if _, err := svc.SetProviderTokens(ctx, "u1", map[string]accounts.ProviderTokenUpdate{"github": {Token: tok("ghp_u1")}, "gitlab": {Token: tok("glpat_u1")}}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.SetProviderTokens(ctx, "u2", map[string]accounts.ProviderTokenUpdate{"github": {Token: tok("ghp_u2")}}); err != nil {
		t.Fatal(err)
	}
	sealed := func(v string) string {
		s, err := sealer.Seal(v)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	for _, c := range []struct {
		name   string
		stored string // a stored GITLAB_TOKEN secret ("" for none)
		start  map[string]string
		want   map[string]string
	}{
		{"tokens only", "", nil, map[string]string{"GITHUB_TOKEN": "ghp_u1", "GITLAB_TOKEN": "glpat_u1"}},
		{"a stored secret wins", "glpat_stored", nil, map[string]string{"GITHUB_TOKEN": "ghp_u1", "GITLAB_TOKEN": "glpat_stored"}},
		{"the start's secret wins", "glpat_stored", map[string]string{"GITHUB_TOKEN": sealed("ghp_start")}, map[string]string{"GITHUB_TOKEN": "ghp_start", "GITLAB_TOKEN": "glpat_stored"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.stored != "" {
				if err := store.PutSecret(ctx, acs.Secret{OwnerID: "u1", Name: "GITLAB_TOKEN", Sealed: sealed(c.stored)}); err != nil {
					t.Fatal(err)
				}
			}
			got, err := startflow.MergeSecrets(ctx, store, sealer, "u1", c.start)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(c.want) {
				t.Errorf("got %d secrets, want %d", len(got), len(c.want))
			}
			for k, v := range c.want {
				if got[k] != v {
					t.Errorf("%s = %q, want %q", k, got[k], v)
				}
			}
		})
	}
	// A user without settings has none.
	if got, err := startflow.MergeSecrets(ctx, store, sealer, "u3", nil); err != nil || len(got) != 0 {
		t.Errorf("u3: %v %v", got, err)
	}
}
