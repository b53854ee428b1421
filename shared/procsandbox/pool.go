package procsandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/acs-project/acs/shared/acs"
)

// The warm pool: like the Kubernetes runtime's, the local runtime keeps
// Config.Warm agent servers started ahead of need, so that a new sandbox
// costs what a reused one does.
//
// A warm member is a sandbox directory of its own, Root/warm-<random>, whose
// agent server runs with a key of its own and the pool's environment; its
// meta file names it by that id. Start claims one atomically (under the
// runtime's lock): the member's meta file is rewritten with the sandbox's
// id, Root/{sandbox id} becomes a link to the member's directory (the
// process keeps the paths it was started with), and the process is the
// sandbox's from then on — its key is the sandbox's session key. A claim
// happens only when the request's spec and environment are those the
// member was started with, and it starts the pool's refill in the
// background. Unclaimed members are stopped by Close and removed when the
// next runtime starts on the same root.

// warmPrefix starts the id of every warm member (no sandbox id has it:
// sandbox ids are hexadecimal).
const warmPrefix = "warm-"

// warmPool is the runtime's pool state, guarded by Runtime.mu.
type warmPool struct {
	// members are the unclaimed members' ids, oldest first.
	members []string
	// hash is what each member was started with (poolHash).
	hash map[string]string
	// spec is the spec the pool is kept for (the last one Fill was given).
	spec *acs.SandboxSpec
	// filling is set while a background refill runs.
	filling bool
	closed  bool
}

// poolHash digests what an agent server is started with: its spec's id and
// the environment (the spec's InitialEnv under the request's).
func poolHash(specID string, env map[string]string) string {
	keys := slices.Sorted(maps.Keys(env))
	var b strings.Builder
	b.WriteString(specID)
	for _, k := range keys {
		fmt.Fprintf(&b, "\x00%s=%s", k, env[k])
	}
	return acs.HashKey(b.String())
}

// claimLocked gives the sandbox of req a warm member when one was started
// for its spec and environment: ready ones first, then the oldest still
// starting. It reports whether it did; on false nothing changed. A claim
// starts the pool's refill.
func (r *Runtime) claimLocked(req acs.StartRequest) bool {
	want := poolHash(req.Spec.ID, mergeEnv(req.Spec.InitialEnv, req.Env))
	if _, err := os.Lstat(r.dir(req.SandboxID)); err == nil {
		return false // its directory exists: a start again of a sandbox
	}
	// Ready members first, then those still starting, each oldest first.
	var ready, starting []string
	for _, id := range r.warm.members {
		p := r.procs[id]
		if r.warm.hash[id] != want || p == nil || p.failed != "" {
			continue
		}
		if r.runStatusLocked(id).Status == acs.SandboxRunning {
			ready = append(ready, id)
		} else {
			starting = append(starting, id)
		}
	}
	cands := append(ready, starting...)
	for _, wid := range cands {
		if err := r.adoptLocked(wid, req); err != nil {
			slog.Warn("procsandbox: claim a warm agent server", "sandbox", req.SandboxID, "warm", wid, "error", err)
			continue
		}
		r.refillLocked()
		return true
	}
	return false
}

// adoptLocked makes warm member wid the sandbox of req.
func (r *Runtime) adoptLocked(wid string, req acs.StartRequest) error {
	link := r.dir(req.SandboxID)
	m := meta{ID: req.SandboxID, OwnerID: req.OwnerID, SpecID: req.Spec.ID,
		WorkingDir: filepath.Join(link, "workspace"), CreatedAt: time.Now().UTC()}
	if err := writeMeta(r.dir(wid), m); err != nil {
		return err
	}
	if err := os.Symlink(wid, link); err != nil {
		// Back to the pool's own meta, so that a restart removes it.
		_ = writeMeta(r.dir(wid), meta{ID: wid, SpecID: req.Spec.ID, WorkingDir: filepath.Join(r.dir(wid), "workspace"), CreatedAt: m.CreatedAt})
		return fmt.Errorf("link %s to %s: %w", req.SandboxID, wid, err)
	}
	p := r.procs[wid]
	delete(r.procs, wid)
	p.id, p.pool = req.SandboxID, "hit"
	r.procs[req.SandboxID] = p
	r.warm.members = slices.DeleteFunc(r.warm.members, func(id string) bool { return id == wid })
	delete(r.warm.hash, wid)
	return nil
}

// writeMeta writes a sandbox directory's meta file atomically.
func writeMeta(dir string, m meta) error {
	raw, err := json.Marshal(m)
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, metaFile+".tmp")
	if err := os.WriteFile(tmp, raw, 0o600); err != nil {
		return fmt.Errorf("procsandbox: write meta: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, metaFile)); err != nil {
		return fmt.Errorf("procsandbox: write meta: %w", err)
	}
	return nil
}

// refillDelay is how long after a claim the pool's refill starts: an
// agent server starting up competes for the CPU (on a 2-core machine it
// doubled the time of the start that had just claimed a member), so the
// refill lets that start finish first.
const refillDelay = 300 * time.Millisecond

// refillLocked starts a background Fill for the pool's spec, after
// refillDelay, unless one is due or runs.
func (r *Runtime) refillLocked() {
	if r.warm.filling || r.warm.closed || r.warm.spec == nil {
		return
	}
	r.warm.filling = true
	spec := *r.warm.spec
	go func() {
		time.Sleep(refillDelay)
		r.mu.Lock()
		closed := r.warm.closed
		r.mu.Unlock()
		if closed {
			return
		}
		if _, err := r.Fill(context.Background(), []acs.SandboxSpec{spec}); err != nil {
			slog.Warn("procsandbox: refill the warm pool", "error", err)
		}
		r.mu.Lock()
		r.warm.filling = false
		r.mu.Unlock()
	}()
}

var _ acs.WarmPool = (*Runtime)(nil)

// Fill keeps Config.Warm agent servers started for the first of specs (the
// default spec), with Config.WarmEnv: it starts the missing ones and
// removes failed members and members started for another spec or
// environment. It does not wait for the new ones to listen. With Warm 0,
// or no spec, it removes every member.
func (r *Runtime) Fill(ctx context.Context, specs []acs.SandboxSpec) (acs.PoolReport, error) {
	var rep acs.PoolReport
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.warm.closed {
		return rep, nil
	}
	want, hash := 0, ""
	if len(specs) > 0 && r.cfg.Warm > 0 {
		spec := specs[0]
		r.warm.spec = &spec
		want = r.cfg.Warm
		hash = poolHash(spec.ID, mergeEnv(spec.InitialEnv, r.cfg.WarmEnv))
	}
	for _, wid := range slices.Clone(r.warm.members) {
		p := r.procs[wid]
		if p != nil && p.failed == "" && r.warm.hash[wid] == hash && rep.Warm < want {
			rep.Warm++
			continue
		}
		r.removeMemberLocked(wid)
		rep.Removed++
	}
	for ; rep.Warm < want; rep.Warm++ {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		if err := r.startMemberLocked(*r.warm.spec, hash); err != nil {
			return rep, err
		}
		rep.Created++
	}
	return rep, nil
}

// startMemberLocked starts one warm member of spec.
func (r *Runtime) startMemberLocked(spec acs.SandboxSpec, hash string) error {
	wid := warmPrefix + acs.NewID()[:20]
	dir := r.dir(wid)
	for _, d := range []string{filepath.Join(dir, "workspace"), filepath.Join(dir, "state"), filepath.Join(dir, "home")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("procsandbox: create warm sandbox %s: %w", d, err)
		}
	}
	if err := writeMeta(dir, meta{ID: wid, SpecID: spec.ID, WorkingDir: filepath.Join(dir, "workspace"), CreatedAt: time.Now().UTC()}); err != nil {
		return err
	}
	// A member pays for its first conversation's first-use costs before
	// it listens (agentserver.Server.Prewarm), while it waits in the pool.
	env := mergeEnv(spec.InitialEnv, r.cfg.WarmEnv)
	env["ACS_AGENT_PREWARM"] = "1"
	if err := r.launchLocked(wid, acs.NewSecret(40), env); err != nil {
		os.RemoveAll(dir)
		return fmt.Errorf("procsandbox: start a warm agent server: %w", err)
	}
	r.warm.members = append(r.warm.members, wid)
	r.warm.hash[wid] = hash
	return nil
}

// removeMemberLocked stops an unclaimed member and removes its directory.
func (r *Runtime) removeMemberLocked(wid string) {
	r.warm.members = slices.DeleteFunc(r.warm.members, func(id string) bool { return id == wid })
	delete(r.warm.hash, wid)
	r.stopLocked(wid)
	if err := os.RemoveAll(r.dir(wid)); err != nil {
		slog.Warn("procsandbox: remove a warm sandbox", "warm", wid, "error", err)
	}
}

// removeUnclaimed removes the directories of members a previous runtime
// left unclaimed (their agent servers were stopped by its Close, or killed
// as orphans).
func (r *Runtime) removeUnclaimed(entries []os.DirEntry) {
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), warmPrefix) {
			continue
		}
		dir := filepath.Join(r.cfg.Root, e.Name())
		var m meta
		raw, err := os.ReadFile(filepath.Join(dir, metaFile))
		if err == nil && json.Unmarshal(raw, &m) == nil && !strings.HasPrefix(m.ID, warmPrefix) {
			continue // claimed: a sandbox's directory
		}
		if err := os.RemoveAll(dir); err != nil {
			slog.Warn("procsandbox: remove an unclaimed warm sandbox", "dir", dir, "error", err)
		}
	}
}
