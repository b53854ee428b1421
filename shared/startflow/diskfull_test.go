package startflow_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/acs-project/acs/internal/diskfull/diskfulltest"
	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/v1wire"
)

// A start whose sandbox cannot be written for a full disk ends in ERROR
// with the storage-full wording and no host path, and a start after space
// is freed works.
func TestStartOnAFullDiskSaysSoWithoutAHostPath(t *testing.T) {
	disk := diskfulltest.Dir(t, 1<<20)
	root := filepath.Join(disk, "sandboxes")
	e := newEnv(t, envOptions{sandboxRoot: root, maxAttempts: 1})
	free := diskfulltest.Fill(t, disk)
	tk, err := e.svc.Submit(ctx, acs.User{ID: "alice"}, v1wire.StartRequest{})
	if err != nil {
		t.Fatal(err)
	}
	done := e.drive(t, tk.ID, false)
	if done.Status != acs.TaskError || done.Detail == nil {
		t.Fatalf("task %s detail %v, want ERROR with a detail", done.Status, done.Detail)
	}
	detail := *done.Detail
	for _, want := range []string{"disk is full", "retry later"} {
		if !strings.Contains(detail, want) {
			t.Errorf("detail %q does not say %q", detail, want)
		}
	}
	for _, leak := range []string{disk, "procsandbox", "no space left"} {
		if strings.Contains(detail, leak) {
			t.Errorf("detail %q shows %q", detail, leak)
		}
	}
	if last := done.Steps[len(done.Steps)-1]; strings.Contains(last.Detail, disk) {
		t.Errorf("the ERROR step shows the host path: %q", last.Detail)
	}
	free()
	tk, err = e.svc.Submit(ctx, acs.User{ID: "alice"}, v1wire.StartRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if done := e.drive(t, tk.ID, false); done.Status != acs.TaskReady {
		t.Fatalf("a start after space was freed: %s %v", done.Status, done.Detail)
	}
}
