package procsandbox

import (
	"context"
	"fmt"
	"io"
	"path/filepath"

	"github.com/acs-project/acs/internal/wsarchive"
	"github.com/acs-project/acs/shared/acs"
)

// Archive writes a gzip-compressed tar of the sandbox's workspace to w,
// streaming, with wsarchive.Write, which says what the archive holds and
// guarantees: entry names relative to the workspace, links stored and never
// followed, nothing outside the workspace read (os.Root), special files
// skipped, owners not recorded. The sandbox's home and agent-server state
// live outside its workspace and are not archived.
//
// It works whether the sandbox is running or paused; a running sandbox may
// change files while they are archived, and a file that shrinks meanwhile
// fails the archive (retry it). Errors wrap acs.ErrNotFound for an unknown
// or deleted sandbox (also one deleted during the walk; nothing is written
// for an unknown one), ctx's error when ctx ends, or the write or read
// failure. On error w may hold a partial archive.
func (r *Runtime) Archive(ctx context.Context, id string, w io.Writer) error {
	if err := r.checkExists(id); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("procsandbox: archive %s: %w", id, err)
	}
	err := wsarchive.Write(ctx, filepath.Join(r.dir(id), "workspace"), w)
	if ctx.Err() == nil {
		// A sandbox deleted mid-walk shows up as files vanishing (which
		// the walk skips): the archive is of no sandbox then.
		if nf := r.checkExists(id); nf != nil {
			return nf
		}
	}
	if err != nil {
		return fmt.Errorf("procsandbox: archive %s: %w", id, err)
	}
	return nil
}

func (r *Runtime) checkExists(id string) error {
	r.mu.Lock()
	st := r.statusLocked(id)
	r.mu.Unlock()
	if st.Status == acs.SandboxMissing {
		return fmt.Errorf("procsandbox: sandbox %s: %w", id, acs.ErrNotFound)
	}
	return nil
}
