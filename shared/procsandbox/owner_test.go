package procsandbox_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/acs-project/acs/internal/testwait"
	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/procsandbox"
)

// The owner role: with ownerVar set, the test binary owns a sandbox
// instead of running tests, as `acs serve` does. It starts a runtime on
// OWNER_ROOT with the acs binary OWNER_BIN (without cgroups when
// OWNER_NO_CGROUPS is set), starts sandbox OWNER_ID,
// prints its status as JSON once it runs, and closes the runtime on
// SIGTERM.
const ownerVar = "PROCSANDBOX_TEST_OWNER"

// runOwner plays the owner role and returns the exit code.
func runOwner() int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	rt, err := procsandbox.New(procsandbox.Config{Binary: os.Getenv("OWNER_BIN"), Root: os.Getenv("OWNER_ROOT"),
		StopTimeout: 5 * time.Second, NoCgroups: os.Getenv("OWNER_NO_CGROUPS") != ""})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer rt.Close()
	id := os.Getenv("OWNER_ID")
	if _, err := rt.Start(ctx, acs.StartRequest{SandboxID: id, SessionKey: "owner-key"}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	var st acs.RuntimeStatus
	if !testwait.Until(30*time.Second, func() bool { st, _ = rt.Status(ctx, id); return st.Status == acs.SandboxRunning }) {
		fmt.Fprintf(os.Stderr, "sandbox not running: %+v\n", st)
		return 1
	}
	json.NewEncoder(os.Stdout).Encode(st)
	<-ctx.Done()
	return 0
}
