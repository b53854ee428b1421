package startflow

import (
	"context"
	"errors"

	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/sandboxes"
)

// placer decides where starts go. The capacity check at submit, placement
// on submit and the worker's placement all ask it: it reads the owner's
// settings and sandboxes and applies acs.Place. It reserves nothing.
type placer struct {
	store Store
}

// settings returns the owner's settings, the defaults when never saved.
func (p placer) settings(ctx context.Context, owner string) (acs.Settings, error) {
	s, err := p.store.GetSettings(ctx, owner)
	if errors.Is(err, acs.ErrNotFound) {
		return acs.DefaultSettings(owner), nil
	}
	if s.MaxConversationsPerSandbox == 0 {
		s.MaxConversationsPerSandbox = acs.DefaultMaxConversationsPerSandbox
	}
	return s, err
}

// decide is acs.Place: the start flow's one placement rule.
func (p placer) decide(settings acs.Settings, cands []acs.Sandbox, req acs.PlaceRequest) acs.Decision {
	return acs.Place(settings, cands, req)
}

// explicit decides for a start that names sandbox id: the sandbox as
// stored, passed through refresh when refresh is not nil. err is a failed
// read; a sandbox not found is the decision's refusal.
func (p placer) explicit(ctx context.Context, settings acs.Settings, owner, id string, refresh func(context.Context, acs.Sandbox) acs.Sandbox) (acs.Decision, error) {
	req := acs.PlaceRequest{Owner: owner, SandboxID: id}
	sb, err := p.store.GetSandbox(ctx, id)
	switch {
	case errors.Is(err, acs.ErrNotFound):
		return p.decide(settings, nil, req), nil
	case err != nil:
		return acs.Decision{}, err
	}
	if refresh != nil && sb.OwnerID == owner {
		sb = refresh(ctx, sb)
	}
	return p.decide(settings, []acs.Sandbox{sb}, req), nil
}

// sandboxes lists owner's sandboxes, newest first, with lastCreated among
// them: the sandbox the previous placement lock holder created, which the
// listing may not show yet.
func (p placer) sandboxes(ctx context.Context, owner, lastCreated string) ([]acs.Sandbox, error) {
	var mine []acs.Sandbox
	listed := false
	if err := sandboxes.EachSandbox(ctx, p.store, owner, func(sb acs.Sandbox) {
		mine = append(mine, sb)
		listed = listed || sb.ID == lastCreated
	}); err != nil {
		return nil, err
	}
	if lastCreated != "" && !listed {
		sb, err := p.store.GetSandbox(ctx, lastCreated)
		switch {
		case err == nil && sb.OwnerID == owner:
			mine = append(mine, sb)
			acs.SortSandboxes(mine)
		case err != nil && !errors.Is(err, acs.ErrNotFound):
			return nil, err
		}
	}
	return mine, nil
}

// roomAtSubmit reports whether a start needs room under the owner's cap
// on running sandboxes, and for a paused sandbox to resume, which one. An
// explicit sandbox_id that cannot be read needs none: the worker's
// placement reports it. Otherwise the owner's strategy decides over their
// sandboxes, listed only when it groups.
func (p placer) roomAtSubmit(ctx context.Context, owner string, sandboxID *string) (need bool, paused string, err error) {
	var d acs.Decision
	if sandboxID != nil {
		if d, err = p.explicit(ctx, acs.Settings{}, owner, *sandboxID, nil); err != nil {
			return false, "", nil
		}
	} else {
		settings, err := p.settings(ctx, owner)
		if err != nil {
			return false, "", err
		}
		var mine []acs.Sandbox
		if settings.SandboxGroupingStrategy.Groups() {
			if mine, err = p.sandboxes(ctx, owner, ""); err != nil {
				return false, "", err
			}
		}
		d = p.decide(settings, mine, acs.PlaceRequest{Owner: owner})
	}
	if d.Sandbox != nil {
		paused = d.Sandbox.ID
	}
	return d.NeedsRoom(), paused, nil
}
