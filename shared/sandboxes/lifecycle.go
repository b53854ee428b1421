// Package sandboxes is the sandbox lifecycle service: creation under the
// running cap (claims), pause, resume, readiness, deletion and removal,
// activity, refresh from the runtime, and the idle rules of a reconciler
// pass.
package sandboxes

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"time"

	"github.com/acs-project/acs/client"
	"github.com/acs-project/acs/shared/acs"
)

// Lifecycle runs the sandbox lifecycle the spec and DESIGN.md define:
// creation under a per-user cap on running sandboxes, pause (compute
// released, workspace kept), resume (new session key), readiness (RUNNING and
// the agent server answers /alive), deletion (MISSING, transcript kept), and
// the idle reconciler (pause after IdlePause, archive and clean up after
// IdleCleanup). The same code serves the API, the start worker and the
// reconciler, locally and on AWS.
type Lifecycle struct {
	Store   Store
	Runtime acs.Runtime
	// Blobs receives workspace archives at cleanup (nil: no archive).
	Blobs  acs.Blobs
	Config Config
	Now    func() time.Time
}

// Store is what the lifecycle keeps: sandboxes and the running cap's
// quota records, the start tasks and conversations placed on a sandbox,
// and the messages queued for its conversations.
type Store interface {
	acs.SandboxStore
	acs.QuotaStore
	acs.StartTaskStore
	acs.ConversationStore
	acs.PendingMessageStore
}

func (l *Lifecycle) now() time.Time {
	if l.Now != nil {
		return l.Now().UTC()
	}
	return time.Now().UTC()
}

// The running cap and its claims.
//
// A sandbox counts against its owner's cap while its record reads RUNNING or
// STARTING. A claim (acs.Quota.Claims, made atomically by Claim) covers the
// moments before the record shows that: between Claim and CreateSandbox for
// a new sandbox, and until the record reads RUNNING again for a resume. A
// claim stays while its record counts, so a check whose listing of the
// owner's sandboxes is older than the record still sees the claim; it is
// given back (release) the moment the sandbox stops counting: paused,
// deleted (MISSING), removed with its last conversation, or failed to start
// or resume. A claim left behind (a crash between the two writes, or a path
// that missed it) is pruned at every check by liveClaims:
//   - its sandbox is the one being claimed again (except): dropped;
//   - its record counts (RUNNING, STARTING): kept, not counted (the record
//     is);
//   - its record does not count and changed after the claim (paused,
//     stopped, failed): dropped;
//   - its record does not count and is unchanged since the claim (a resume
//     on its way): counted, for at most claimTTL;
//   - its record is not in the listing (removed, or not created yet): counted
//     only when the claim is younger than claimGrace at the time the listing
//     began, which covers the step from Claim to CreateSandbox (and the lag
//     of an eventually consistent owner index); an older claim is dropped.
//     So a sandbox removed without its claim given back frees its slot at
//     the next check, or claimGrace after its claim at the latest.

// claimTTL bounds how long a claim counts without its sandbox's record
// showing it running.
const claimTTL = 10 * time.Minute

// claimGrace is how long a claim counts while its sandbox's record is not
// listed: a new sandbox's record is written right after its claim.
const claimGrace = 30 * time.Second

// capacityError is the 429 answer at the cap.
func capacityError(n int) error {
	return acs.Errorf(acs.ECAPACITY, "You have %d running sandboxes, the most allowed. Pause or delete one (%s), or retry later", n, acs.RoutePauseSandbox.Ref())
}

// usage is a listing of an owner's sandboxes, for the cap.
type usage struct {
	// running holds the sandboxes that count (RUNNING or STARTING), except
	// the one being claimed.
	running map[string]bool
	// seen holds every listed sandbox.
	seen map[string]acs.Sandbox
	// listedAt is when the listing began.
	listedAt time.Time
}

// usage lists the owner's sandboxes: those that count against the cap (not
// counting except) and every sandbox's status and last update.
func (l *Lifecycle) usage(ctx context.Context, owner, except string) (usage, error) {
	u := usage{running: map[string]bool{}, seen: map[string]acs.Sandbox{}, listedAt: l.now()}
	err := EachSandbox(ctx, l.Store, owner, func(sb acs.Sandbox) {
		u.seen[sb.ID] = sb
		if sb.ID != except && sb.Status.CountsAgainstCap() {
			u.running[sb.ID] = true
		}
	})
	return u, err
}

// liveClaims prunes q's claims by the rules above and returns how many
// count on top of u.running.
func liveClaims(q *acs.Quota, u usage, except string, now time.Time) int {
	n := 0
	for id, at := range q.Claims {
		sb, listed := u.seen[id]
		switch {
		case id == except, now.Sub(at) > claimTTL:
			delete(q.Claims, id)
		case listed && sb.Status.CountsAgainstCap():
			// The record counts; the claim stays until the sandbox stops.
		case listed && sb.UpdatedAt.After(at):
			delete(q.Claims, id) // stopped since the claim
		case listed:
			n++ // a resume on its way
		case at.Before(u.listedAt.Add(-claimGrace)):
			delete(q.Claims, id) // the record is gone
		default:
			n++ // the record is about to be written (or not yet indexed)
		}
	}
	return n
}

// CheckCapacity returns ErrCapacity when owner already has the maximum of
// running (or starting, or being started) sandboxes, not counting except. A
// cap of 0 means none. It claims nothing (see Claim); it stores the pruned
// claims.
func (l *Lifecycle) CheckCapacity(ctx context.Context, owner, except string) error {
	limit := l.Config.MaxRunningSandboxes
	if limit <= 0 {
		return nil
	}
	u, err := l.usage(ctx, owner, except)
	if err != nil {
		return err
	}
	now := l.now()
	n := 0
	if _, err := l.Store.UpdateQuota(ctx, owner, func(q *acs.Quota) error {
		n = len(u.running) + liveClaims(q, u, except, now)
		return nil
	}); err != nil {
		return err
	}
	if n >= limit {
		return capacityError(n)
	}
	return nil
}

// Claim reserves room for sandbox id (being created or resumed) under the
// owner's cap, atomically: concurrent claims never exceed it. ErrCapacity
// when full. The claim is given back when the sandbox stops counting
// (Pause, Delete, Remove, a failed Create or Resume, Release); one left behind is
// pruned as liveClaims says.
func (l *Lifecycle) Claim(ctx context.Context, owner, id string) error {
	limit := l.Config.MaxRunningSandboxes
	if limit <= 0 {
		return nil
	}
	u, err := l.usage(ctx, owner, id)
	if err != nil {
		return err
	}
	now := l.now()
	_, err = l.Store.UpdateQuota(ctx, owner, func(q *acs.Quota) error {
		if n := len(u.running) + liveClaims(q, u, id, now); n >= limit {
			return capacityError(n)
		}
		q.Claims[id] = now
		return nil
	})
	return err
}

// errNoClaim aborts a release that has nothing to give back (no write).
var errNoClaim = errors.New("no claim to release")

// Release gives back owner's claim on sandbox id, which no longer counts
// against the cap. A failure is logged: the claim is then pruned at a later
// check (liveClaims).
func (l *Lifecycle) Release(ctx context.Context, owner, id string) {
	if owner == "" || l.Config.MaxRunningSandboxes <= 0 {
		return
	}
	_, err := l.Store.UpdateQuota(ctx, owner, func(q *acs.Quota) error {
		if _, ok := q.Claims[id]; !ok {
			return errNoClaim
		}
		delete(q.Claims, id)
		return nil
	})
	if err != nil && !errors.Is(err, errNoClaim) {
		slog.Warn("lifecycle: give back a running-cap claim", "sandbox", id, "owner", owner, "error", err)
	}
}

// EachSandbox visits every sandbox of owner (all pages).
func EachSandbox(ctx context.Context, st acs.SandboxStore, owner string, fn func(acs.Sandbox)) error {
	opts := acs.ListOptions{Limit: 100}
	for {
		page, err := st.ListSandboxes(ctx, owner, opts)
		if err != nil {
			return err
		}
		for _, sb := range page.Items {
			fn(sb)
		}
		if page.Next == "" {
			return nil
		}
		opts.PageToken = page.Next
	}
}

// Create stores a new sandbox with the given slots and starts its compute.
// A record that exists and was created by the same task (a redelivery) is
// started again idempotently. ErrCapacity when the owner's cap is reached.
func (l *Lifecycle) Create(ctx context.Context, sb acs.Sandbox) (acs.Sandbox, error) {
	spec, ok := l.Config.Spec(sb.SpecID)
	if !ok {
		return acs.Sandbox{}, acs.Errorf(acs.EINVALID, "unknown sandbox spec %q", sb.SpecID)
	}
	sb.SpecID = spec.ID
	now := l.now()
	if sb.CreatedAt.IsZero() {
		sb.CreatedAt = now
	}
	sb.UpdatedAt, sb.LastUsedAt, sb.LastActivityAt = now, now, now
	if sb.Status == "" {
		sb.Status = acs.SandboxStarting
	}
	existing, err := l.Store.GetSandbox(ctx, sb.ID)
	switch {
	case err == nil:
		if sb.CreatedByTask == "" || existing.CreatedByTask != sb.CreatedByTask {
			return acs.Sandbox{}, acs.Errorf(acs.ECONFLICT, "sandbox id %s is already in use", sb.ID)
		}
		sb = existing
		if !sb.Status.CountsAgainstCap() {
			// A start again after a failed one (which gave its claim back).
			if err := l.Claim(ctx, sb.OwnerID, sb.ID); err != nil {
				return acs.Sandbox{}, err
			}
		}
	case errors.Is(err, acs.ErrNotFound):
		if err := l.Claim(ctx, sb.OwnerID, sb.ID); err != nil {
			return acs.Sandbox{}, err
		}
		if err := l.Store.CreateSandbox(ctx, sb); err != nil {
			if !errors.Is(err, acs.ErrConflict) { // a conflict: the claim is the other creator's too
				l.Release(ctx, sb.OwnerID, sb.ID)
			}
			return acs.Sandbox{}, err
		}
	default:
		return acs.Sandbox{}, err
	}
	st, err := l.Runtime.Start(ctx, acs.StartRequest{SandboxID: sb.ID, OwnerID: sb.OwnerID, Spec: spec,
		SessionKey: acs.NewSecret(40), Env: l.Config.SandboxEnv()})
	if err != nil {
		_, _ = l.Store.UpdateSandbox(ctx, sb.ID, func(s *acs.Sandbox) error {
			s.Status, s.Detail = acs.SandboxError, "the runtime could not start the sandbox: "+acs.Detail(err)
			s.UpdatedAt = l.now()
			return nil
		})
		l.Release(ctx, sb.OwnerID, sb.ID)
		return acs.Sandbox{}, fmt.Errorf("start sandbox %s: %w", sb.ID, err)
	}
	return l.record(ctx, sb.ID, st)
}

// record copies a runtime status onto the sandbox record.
func (l *Lifecycle) record(ctx context.Context, id string, st acs.RuntimeStatus) (acs.Sandbox, error) {
	return l.Store.UpdateSandbox(ctx, id, func(s *acs.Sandbox) error {
		ApplyRuntimeStatus(s, st, l.now())
		return nil
	})
}

// Refresh updates sb from its runtime (a sandbox that stopped or came back
// is noticed on read) and returns it with the runtime's report. Read-only
// sandboxes are returned as they are.
func (l *Lifecycle) Refresh(ctx context.Context, sb acs.Sandbox) (acs.Sandbox, acs.RuntimeStatus) {
	if sb.Status.ReadOnly() {
		return sb, acs.RuntimeStatus{Status: sb.Status}
	}
	st, err := l.Runtime.Status(ctx, sb.ID)
	if err != nil {
		slog.Warn("lifecycle: runtime status", "sandbox", sb.ID, "error", err)
		return sb, acs.RuntimeStatus{Status: sb.Status, AgentURL: sb.AgentURL}
	}
	if st.Status != sb.Status || st.AgentURL != sb.AgentURL || (st.SessionKey != "" && acs.HashKey(st.SessionKey) != sb.SessionKeyHash) {
		if updated, err := l.record(ctx, sb.ID, st); err == nil {
			sb = updated
		}
	}
	return sb, st
}

// Pause releases the sandbox's compute and keeps its workspace. Every
// conversation on it is paused with it. Pausing a paused sandbox is a
// no-op; a read-only one is refused (acs.Sandbox.Usable).
func (l *Lifecycle) Pause(ctx context.Context, sb acs.Sandbox) (acs.Sandbox, error) {
	// The runtime's view first: a sandbox whose compute died is ERROR, not
	// something to pause.
	sb, _ = l.Refresh(ctx, sb)
	if err := sb.Usable(); err != nil {
		return sb, err
	}
	if err := l.Runtime.Pause(ctx, sb.ID); err != nil && !errors.Is(err, acs.ErrNotFound) {
		return sb, fmt.Errorf("pause sandbox %s: %w", sb.ID, err)
	}
	id, owner := sb.ID, sb.OwnerID
	sb, err := l.Store.UpdateSandbox(ctx, id, func(s *acs.Sandbox) error {
		if s.Status != acs.SandboxPaused {
			now := l.now()
			s.Status, s.PausedAt, s.UpdatedAt = acs.SandboxPaused, &now, now
		}
		s.SessionKeyHash, s.AgentURL = "", ""
		return nil
	})
	if err == nil {
		l.Release(ctx, owner, id)
	}
	return sb, err
}

// Resume brings a paused sandbox back with a new session key (a running one
// is left as it is). An ERROR sandbox (a crash loop, say) is started again
// the same way when its runtime still has it; one whose workspace is gone
// stays ERROR (ErrSandboxFailed with the reason). ErrCapacity when the
// owner's cap is reached; a MISSING sandbox is ErrGone.
func (l *Lifecycle) Resume(ctx context.Context, sb acs.Sandbox) (acs.Sandbox, error) {
	var st acs.RuntimeStatus
	if sb.Status == acs.SandboxError {
		// Refresh leaves ERROR records alone; the runtime says whether
		// there is something left to start.
		cur, err := l.Runtime.Status(ctx, sb.ID)
		if err != nil {
			return sb, fmt.Errorf("resume sandbox %s: %w", sb.ID, err)
		}
		if cur.Status == acs.SandboxMissing {
			if updated, err := l.record(ctx, sb.ID, cur); err == nil {
				sb = updated
			}
			return sb, sb.Usable()
		}
	} else {
		sb, st = l.Refresh(ctx, sb)
		if err := sb.Usable(); err != nil {
			return sb, err
		}
		if st.Status == acs.SandboxRunning || st.Status == acs.SandboxStarting {
			return sb, nil
		}
	}
	if err := l.Claim(ctx, sb.OwnerID, sb.ID); err != nil {
		return sb, err
	}
	spec, _ := l.Config.Spec(sb.SpecID)
	st, err := l.Runtime.Resume(ctx, sb.ID, acs.NewSecret(40), mergeEnv(spec.InitialEnv, l.Config.SandboxEnv()))
	if err != nil {
		l.Release(ctx, sb.OwnerID, sb.ID) // it did not come back
	}
	if errors.Is(err, acs.ErrNotFound) {
		_, _ = l.record(ctx, sb.ID, acs.RuntimeStatus{Status: acs.SandboxMissing})
		return sb, acs.ErrArchived
	}
	if err != nil {
		// A sandbox the runtime cannot start again (its workspace is
		// gone) is ERROR with the runtime's reason.
		if cur, serr := l.Runtime.Status(ctx, sb.ID); serr == nil && cur.Status == acs.SandboxError {
			if updated, rerr := l.record(ctx, sb.ID, cur); rerr == nil {
				sb = updated
			}
			return sb, sb.Usable()
		}
		return sb, fmt.Errorf("resume sandbox %s: %w", sb.ID, err)
	}
	now := l.now()
	return l.Store.UpdateSandbox(ctx, sb.ID, func(s *acs.Sandbox) error {
		ApplyRuntimeStatus(s, st, now)
		s.PausedAt = nil
		s.LastActivityAt = now
		return nil
	})
}

// Ready makes sure the sandbox can serve requests: AwaitReady with an
// /alive probe, then the steps a ready sandbox owes (PayOwed). It
// returns the sandbox and a client for its agent server. Read-only
// sandboxes are refused (acs.Sandbox.Usable); a sandbox still not ready
// after wait is ErrConflict naming its status.
func (l *Lifecycle) Ready(ctx context.Context, sb acs.Sandbox, wait time.Duration) (acs.Sandbox, *client.Agent, error) {
	r, err := l.AwaitReady(ctx, sb, wait, func(ctx context.Context, _ acs.Sandbox, c *client.Agent) bool {
		return c.Alive(ctx) == nil
	})
	if err != nil {
		return r.Sandbox, nil, err
	}
	return l.PayOwed(ctx, r), r.Client, nil
}

// PayOwed runs the steps a sandbox found ready owes, in order:
// BuryTombstones, then FlushQueued. It returns the sandbox as
// FlushQueued does.
func (l *Lifecycle) PayOwed(ctx context.Context, r Readiness) acs.Sandbox {
	l.BuryTombstones(ctx, r.Sandbox, r.Client)
	return l.FlushQueued(ctx, r)
}

// Readiness is a sandbox found ready: RUNNING, its agent server answering.
type Readiness struct {
	Sandbox acs.Sandbox
	// Client is a client for the sandbox's agent server.
	Client *client.Agent
	// Resumed reports that AwaitReady resumed the sandbox.
	Resumed bool
}

// AwaitReady waits, at most wait, until sb is RUNNING and its agent
// server answers ask, a request the caller needs of it sent in place of an
// /alive probe. ask reports whether the agent server answered and keeps
// what it answered; it may be called again while AwaitReady waits. A
// paused sandbox is resumed on the way. AwaitReady sends nothing else to
// the agent server. On error, the Readiness holds the sandbox as last
// read. Read-only sandboxes are refused (acs.Sandbox.Usable); a sandbox
// still not ready after wait is ErrConflict naming its status.
func (l *Lifecycle) AwaitReady(ctx context.Context, sb acs.Sandbox, wait time.Duration, ask func(context.Context, acs.Sandbox, *client.Agent) bool) (Readiness, error) {
	if err := sb.Usable(); err != nil {
		return Readiness{Sandbox: sb}, err
	}
	deadline := l.now().Add(wait)
	poll := l.Config.PollInterval
	if poll <= 0 {
		poll = 100 * time.Millisecond
	}
	resumed := false
	for {
		var st acs.RuntimeStatus
		sb, st = l.Refresh(ctx, sb)
		switch st.Status {
		case acs.SandboxPaused:
			var err error
			if sb, err = l.Resume(ctx, sb); err != nil {
				return Readiness{Sandbox: sb}, err
			}
			resumed = true
		case acs.SandboxRunning:
			client := client.NewServiceAgent(st.AgentURL, st.SessionKey)
			actx, cancel := context.WithTimeout(ctx, 5*time.Second)
			answered := ask(actx, sb, client)
			cancel()
			if answered {
				return Readiness{Sandbox: sb, Client: client, Resumed: resumed}, nil
			}
		case acs.SandboxError, acs.SandboxMissing:
			return Readiness{Sandbox: sb}, sb.Usable()
		}
		if !l.now().Before(deadline) {
			return Readiness{Sandbox: sb}, acs.Errorf(acs.ECONFLICT, "Sandbox is %s. Use %s to resume it first, or retry shortly",
				sb.Status, acs.RouteResumeSandbox.Ref(sb.ID))
		}
		select {
		case <-ctx.Done():
			return Readiness{Sandbox: sb}, ctx.Err()
		case <-time.After(poll):
		}
	}
}

// FlushQueued delivers to a ready sandbox the messages queued for its
// conversations while it was unreachable: after a resume, or when its
// record asks for it (PendingFlush). It clears PendingFlush first and
// returns the sandbox as that write returned it. A failed delivery is
// logged.
func (l *Lifecycle) FlushQueued(ctx context.Context, r Readiness) acs.Sandbox {
	sb := r.Sandbox
	if !r.Resumed && !sb.PendingFlush {
		return sb
	}
	sb, err := l.Store.UpdateSandbox(ctx, sb.ID, func(s *acs.Sandbox) error { s.PendingFlush = false; return nil })
	if err == nil {
		for _, id := range sb.Slots {
			FlushPending(ctx, l.Store, r.Client, acs.Dashed(id), id)
		}
	}
	return sb
}

// Delete removes the sandbox's compute and workspace and marks it MISSING;
// its conversations stay readable (transcripts are in the store). With
// archive, an internal archive of the workspace is kept first (when Blobs is
// set); a failed archive stops the deletion.
func (l *Lifecycle) Delete(ctx context.Context, sb acs.Sandbox, archive bool) (acs.Sandbox, error) {
	key := ""
	if archive && l.Blobs != nil && sb.Status != acs.SandboxMissing {
		key = fmt.Sprintf(ArchivePrefix+"%s/%s.tar.gz", sb.ID, l.now().Format("20060102T150405Z"))
		pr, pw := io.Pipe()
		go func() { pw.CloseWithError(l.Runtime.Archive(ctx, sb.ID, pw)) }()
		if err := l.Blobs.Put(ctx, key, pr); err != nil {
			pr.CloseWithError(err)
			if !errors.Is(err, acs.ErrNotFound) {
				return sb, fmt.Errorf("archive the workspace of sandbox %s: %w", sb.ID, err)
			}
			key = ""
		}
	}
	id, owner := sb.ID, sb.OwnerID
	if err := l.Runtime.Delete(ctx, id); err != nil {
		return sb, fmt.Errorf("delete sandbox %s: %w", id, err)
	}
	sb, err := l.Store.UpdateSandbox(ctx, id, func(s *acs.Sandbox) error {
		now := l.now()
		s.Status, s.UpdatedAt, s.SessionKeyHash, s.AgentURL = acs.SandboxMissing, now, "", ""
		if key != "" {
			s.ArchiveKey = key
		}
		return nil
	})
	if err == nil || errors.Is(err, acs.ErrNotFound) {
		l.Release(ctx, owner, id)
	}
	return sb, err
}

// Remove deletes a sandbox no conversation uses any more: compute,
// workspace and record, and gives back its place under the owner's running
// cap.
func (l *Lifecycle) Remove(ctx context.Context, id string) error {
	sb, err := l.Store.GetSandbox(ctx, id)
	if err != nil && !errors.Is(err, acs.ErrNotFound) {
		return err
	}
	if err := l.Runtime.Delete(ctx, id); err != nil {
		return fmt.Errorf("delete sandbox %s: %w", id, err)
	}
	if err := l.Store.DeleteSandbox(ctx, id); err != nil && !errors.Is(err, acs.ErrNotFound) {
		return err
	}
	// A record already gone leaves no owner to release for; its claim, if
	// any, is pruned at the next check (liveClaims).
	l.Release(ctx, sb.OwnerID, id)
	return nil
}

// touchEvery throttles activity updates.
const touchEvery = 10 * time.Second

// Touch records activity on a sandbox (at most every 10 s, or a quarter of
// the idle timeout when shorter), and with used also LastUsedAt (a start or
// a message).
func (l *Lifecycle) Touch(ctx context.Context, sb acs.Sandbox, used bool) {
	now := l.now()
	every := touchEvery
	if p := l.Config.IdlePause / 4; p > 0 && p < every {
		every = p
	}
	if !used && now.Sub(sb.LastActivityAt) < every {
		return
	}
	_, err := l.Store.UpdateSandbox(ctx, sb.ID, func(s *acs.Sandbox) error {
		s.LastActivityAt = now
		if used {
			s.LastUsedAt = now
		}
		return nil
	})
	if err != nil && !errors.Is(err, acs.ErrNotFound) {
		slog.Warn("lifecycle: record activity", "sandbox", sb.ID, "error", err)
	}
}

// ReconcileReport says what a reconciler pass did.
type ReconcileReport struct {
	Paused    []string `json:"paused"`
	CleanedUp []string `json:"cleaned_up"`
	Failed    []string `json:"failed"`
}

// Reconcile is one pass of the idle rules over every sandbox: a RUNNING one
// idle (no activity) for Config.IdlePause, by its record as read when it is
// examined, and with no work in progress (see working) is paused; a PAUSED one idle for
// Config.IdleCleanup is archived and cleaned up (MISSING). A zero duration
// disables its rule. It also notices sandboxes whose compute died (ERROR).
func (l *Lifecycle) Reconcile(ctx context.Context) (ReconcileReport, error) {
	var rep ReconcileReport
	now := l.now()
	opts := acs.ListOptions{Limit: 100}
	for {
		page, err := l.Store.ListAllSandboxes(ctx, opts)
		if err != nil {
			return rep, err
		}
		for _, sb := range page.Items {
			if sb.Status.ReadOnly() {
				continue
			}
			var st acs.RuntimeStatus
			sb, st = l.Refresh(ctx, sb)
			idle := now.Sub(latest(sb.LastActivityAt, sb.LastUsedAt, sb.CreatedAt))
			switch {
			case sb.Status == acs.SandboxRunning && l.Config.IdlePause > 0 && idle >= l.Config.IdlePause:
				if sb, idle = l.idleNow(ctx, sb); sb.Status != acs.SandboxRunning || idle < l.Config.IdlePause || l.working(ctx, sb, st, idle) {
					continue
				}
				if _, err := l.Pause(ctx, sb); err != nil {
					slog.Warn("reconcile: pause idle sandbox", "sandbox", sb.ID, "error", err)
					rep.Failed = append(rep.Failed, sb.ID)
					continue
				}
				slog.Info("reconcile: paused an idle sandbox", "sandbox", sb.ID, "idle", idle.Round(time.Second))
				rep.Paused = append(rep.Paused, sb.ID)
			case sb.Status == acs.SandboxPaused && l.Config.IdleCleanup > 0 && sb.PausedAt != nil &&
				now.Sub(latest(*sb.PausedAt, sb.LastActivityAt)) >= l.Config.IdleCleanup:
				if _, err := l.Delete(ctx, sb, true); err != nil {
					slog.Warn("reconcile: clean up idle sandbox", "sandbox", sb.ID, "error", err)
					rep.Failed = append(rep.Failed, sb.ID)
					continue
				}
				slog.Info("reconcile: cleaned up an idle sandbox (workspace archived)", "sandbox", sb.ID)
				rep.CleanedUp = append(rep.CleanedUp, sb.ID)
			}
		}
		if page.Next == "" {
			return rep, nil
		}
		opts.PageToken = page.Next
	}
}

func latest(ts ...time.Time) time.Time {
	var out time.Time
	for _, t := range ts {
		if t.After(out) {
			out = t
		}
	}
	return out
}

// BuryTombstones deletes, on a ready agent server, the conversations that
// were deleted while it was paused, and forgets those it deleted. A
// failure is logged: the tombstone stays for the next time.
func (l *Lifecycle) BuryTombstones(ctx context.Context, sb acs.Sandbox, client *client.Agent) {
	if len(sb.Tombstones) == 0 {
		return
	}
	var done []string
	for _, id := range sb.Tombstones {
		if err := client.DeleteConversation(ctx, acs.Dashed(id)); err != nil {
			slog.Warn("lifecycle: delete a conversation deleted while paused", "sandbox", sb.ID, "conversation", id, "error", err)
			continue
		}
		done = append(done, id)
	}
	_, _ = l.Store.UpdateSandbox(ctx, sb.ID, func(s *acs.Sandbox) error {
		keep := s.Tombstones[:0:0]
		for _, id := range s.Tombstones {
			if !slices.Contains(done, id) {
				keep = append(keep, id)
			}
		}
		s.Tombstones = keep
		return nil
	})
}

// idleNow re-reads sb's record and returns it with how long it has been
// idle now: a pass over many sandboxes takes a while, and a start or a
// message since the listing is activity.
func (l *Lifecycle) idleNow(ctx context.Context, sb acs.Sandbox) (acs.Sandbox, time.Duration) {
	if fresh, err := l.Store.GetSandbox(ctx, sb.ID); err == nil {
		sb = fresh
	}
	return sb, l.now().Sub(latest(sb.LastActivityAt, sb.LastUsedAt, sb.CreatedAt))
}

// agentCheckTimeout bounds the reconciler's question to an agent server.
const agentCheckTimeout = 5 * time.Second

// working reports whether sb, idle for idle by its recorded activity, has
// work in progress, which keeps it from being paused:
//   - a conversation is being started on it (a start task holding one of
//     its slots has not finished): cloning, the setup script and the other
//     steps record no activity;
//   - an agent on it is running or backing off an LLM rate limit, as its
//     agent server last reported (a long LLM call or command sends no
//     events);
//   - its agent server (st) says a conversation is running. A run that a
//     message starts (a start's initial message, send-message, a queued
//     message) is running on the agent server before the delivery is
//     answered, but the control plane learns of it from a webhook, which can
//     come later (or be retried after a failure); the agent server is asked
//     rather than the sandbox paused under a run it has not reported yet.
//
// When in doubt it answers true: the store cannot be read, or the agent
// server does not answer while the sandbox has been idle for less than
// twice IdlePause (one more idle period for a busy agent server; a silent
// one is paused after that).
func (l *Lifecycle) working(ctx context.Context, sb acs.Sandbox, st acs.RuntimeStatus, idle time.Duration) bool {
	convs, err := l.Store.ListConversationsBySandbox(ctx, sb.ID)
	if err != nil {
		return true // when in doubt, do not pause
	}
	now := l.now()
	for _, c := range convs {
		if c.ExecutionStatus == "running" || (c.RateLimitedUntil != nil && now.Before(*c.RateLimitedUntil)) {
			return true
		}
	}
	if l.starting(ctx, sb, convs) {
		return true
	}
	running, err := agentRunning(ctx, st)
	if err != nil {
		slog.Warn("reconcile: ask the agent server whether it is working", "sandbox", sb.ID, "error", err)
		return idle < 2*l.Config.IdlePause
	}
	if running {
		slog.Debug("reconcile: the agent server is running a conversation not reported yet", "sandbox", sb.ID)
	}
	return running
}

// starting reports whether a start task holding one of sb's slots has not
// finished (or cannot be read): a slot with no conversation record yet, or
// a conversation its agent server has not reported on yet (the record is
// made just before the conversation is created on the agent server).
func (l *Lifecycle) starting(ctx context.Context, sb acs.Sandbox, convs []acs.Conversation) bool {
	recorded := make(map[string]acs.Conversation, len(convs))
	for _, c := range convs {
		recorded[c.ID] = c
	}
	for _, id := range sb.Slots {
		c, ok := recorded[id]
		switch {
		case !ok:
			if busy, err := l.startingConversation(ctx, sb.OwnerID, id); busy || err != nil {
				return true
			}
		case c.StartTaskID != "" && c.ExecutionStatusAt.IsZero():
			t, err := l.Store.GetStartTask(ctx, c.StartTaskID)
			if errors.Is(err, acs.ErrNotFound) {
				continue
			}
			if err != nil || !t.Status.Done() {
				return true
			}
		}
	}
	return false
}

// startingConversation reports whether an unfinished start task of owner is
// starting conversation id.
func (l *Lifecycle) startingConversation(ctx context.Context, owner, id string) (bool, error) {
	opts := acs.ListOptions{Limit: 100}
	for {
		page, err := l.Store.SearchStartTasks(ctx, owner, acs.StartTaskFilter{ConversationID: id}, acs.SortUpdatedAtDesc, opts)
		if err != nil {
			return false, err
		}
		for _, t := range page.Items {
			if !t.Status.Done() {
				return true, nil
			}
		}
		if page.Next == "" {
			return false, nil
		}
		opts.PageToken = page.Next
	}
}

// agentRunning asks the agent server st reports whether any of its
// conversations is running.
func agentRunning(ctx context.Context, st acs.RuntimeStatus) (bool, error) {
	if st.AgentURL == "" || st.SessionKey == "" {
		return false, errors.New("the runtime reports no agent server address or session key")
	}
	actx, cancel := context.WithTimeout(ctx, agentCheckTimeout)
	defer cancel()
	var n int
	if err := client.NewServiceAgent(st.AgentURL, st.SessionKey).Get(actx, "/api/conversations/count?status=running", &n); err != nil {
		return false, fmt.Errorf("count running conversations: %w", err)
	}
	return n > 0, nil
}

// Get returns the owner's sandbox id; another user's sandbox, like a
// missing one, is acs.ErrNotFound ("Sandbox not found: <id>").
func (l *Lifecycle) Get(ctx context.Context, ownerID, id string) (acs.Sandbox, error) {
	sb, err := l.Store.GetSandbox(ctx, id)
	if errors.Is(err, acs.ErrNotFound) || (err == nil && sb.OwnerID != ownerID) {
		return acs.Sandbox{}, acs.Errorf(acs.ENOTFOUND, "Sandbox not found: %s", id)
	}
	return sb, err
}

// List lists the owner's sandboxes, newest first; a page token this store
// did not issue wraps acs.ErrInvalid.
func (l *Lifecycle) List(ctx context.Context, ownerID string, opts acs.ListOptions) (acs.Page[acs.Sandbox], error) {
	return l.Store.ListSandboxes(ctx, ownerID, opts)
}

// DeleteByUser deletes sandbox sb as its owner asked (DELETE): the
// workspace is archived and deleted (Delete) unless it is MISSING already,
// its conversations become read-only, and a sandbox no conversation uses
// loses its record too.
func (l *Lifecycle) DeleteByUser(ctx context.Context, sb acs.Sandbox) error {
	var err error
	if sb.Status != acs.SandboxMissing {
		if sb, err = l.Delete(ctx, sb, true); err != nil {
			return err
		}
	}
	if sb.ConversationCount() == 0 {
		// Nothing reads it any more: the record goes too.
		if err := l.Store.DeleteSandbox(ctx, sb.ID); err != nil && !errors.Is(err, acs.ErrNotFound) {
			return err
		}
	}
	return nil
}

// ArchivePrefix is the blob key prefix of workspace archives
// (archives/<sandbox>/<time>.tar.gz).
const ArchivePrefix = "archives/"

// ApplyRuntimeStatus updates a sandbox record from its runtime's report.
func ApplyRuntimeStatus(s *acs.Sandbox, st acs.RuntimeStatus, now time.Time) {
	if st.SessionKey != "" {
		s.SessionKeyHash = acs.HashKey(st.SessionKey)
	}
	if s.Status != st.Status || s.AgentURL != st.AgentURL || s.Detail != st.Detail {
		if st.Status == acs.SandboxPaused && s.Status != acs.SandboxPaused {
			s.PausedAt = &now
		}
		s.Status, s.AgentURL, s.Detail = st.Status, st.AgentURL, st.Detail
		s.UpdatedAt = now
	}
	if st.WorkingDir != "" {
		s.WorkingDir = st.WorkingDir
	}
	if st.WarmPool != "" {
		s.WarmPool = st.WarmPool
	}
}
