package kubesandbox

import (
	"encoding/json"
	"os"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/acs-project/acs/shared/acs"
)

// The records fixture: RecordsFixturePath holds a sandbox's record
// ConfigMap and the root ConfigMap of an unclaimed warm runtime as this
// package made them when the file was written (the cluster test
// TestRecordsWrittenEarlierStillWork writes it with
// ACS_UPDATE_STORE_FIXTURES=1). Every later version must read them as
// FixtureSpec and keep the warm runtime (same pool hash). A change of
// format is deliberate: it keeps reading this file and adds its own.

// RecordsFixturePath is the fixture file.
const RecordsFixturePath = "testdata/records.json"

// FixtureSpec is the spec the fixture's sandbox and warm runtime were
// started with.
var FixtureSpec = acs.SandboxSpec{ID: "acs-default", Command: []string{"/usr/local/bin/acs", "agent-server"},
	CreatedAt: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC), InitialEnv: map[string]string{"SPEC_VAR": "from <spec> & co"},
	WorkingDir: "/workspace/fixture"}

// FixtureObject is a ConfigMap of the fixture.
type FixtureObject struct {
	Name        string            `json:"name"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	Data        map[string]string `json:"data"`
}

// RecordsFixture is the content of RecordsFixturePath.
type RecordsFixture struct {
	SandboxID string `json:"sandbox_id"`
	// Env is the runtime's Config.Env (part of the pool hash).
	Env      map[string]string `json:"env"`
	Record   FixtureObject     `json:"record"`
	WarmRoot FixtureObject     `json:"warm_root"`
}

// ReadRecordsFixture reads RecordsFixturePath.
func ReadRecordsFixture(t testing.TB) RecordsFixture {
	t.Helper()
	raw, err := os.ReadFile(RecordsFixturePath)
	if err != nil {
		t.Fatal(err)
	}
	var f RecordsFixture
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestRecordFixtureReads: the spec stored in the fixture's record and warm
// root reads as FixtureSpec, field for field, and the warm root's pool hash
// is still the one a new runtime for the spec gets.
func TestRecordFixtureReads(t *testing.T) {
	f := ReadRecordsFixture(t)
	for _, o := range []FixtureObject{f.Record, f.WarmRoot} {
		if got := recordSpec(&corev1.ConfigMap{Data: o.Data}); !reflect.DeepEqual(got, FixtureSpec) {
			t.Errorf("the spec of %s reads as\n%+v\nwant\n%+v", o.Name, got, FixtureSpec)
		}
	}
	if got, want := poolHash(FixtureSpec, f.Env), f.WarmRoot.Labels[LabelEnv]; got != want {
		t.Errorf("pool hash %s, the warm root's %s: Fill would replace every warm runtime", got, want)
	}
}
