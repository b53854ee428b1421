package boltstore_test

import (
	"path/filepath"
	"testing"

	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/boltstore"
	"github.com/acs-project/acs/shared/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) acs.Store {
		s, err := boltstore.Open(filepath.Join(t.TempDir(), "acs.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}
