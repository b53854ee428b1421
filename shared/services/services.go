// Package services builds the control plane's services over one
// installation's adapters. The wiring calls Build once, where it makes the
// adapters: `acs serve` in cmd/acs and each Lambda function. Each service
// holds only the store contracts it uses; the API serves each route on the
// set Only gives it.
package services

import (
	"time"

	"github.com/acs-project/acs/shared/accounts"
	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/config"
	"github.com/acs-project/acs/shared/conversations"
	"github.com/acs-project/acs/shared/gitrepos"
	"github.com/acs-project/acs/shared/sandboxes"
	"github.com/acs-project/acs/shared/startflow"
)

// Adapters are what the services run over: the infrastructure and its
// configuration.
type Adapters struct {
	Store   acs.Store
	Queue   acs.Queue
	Runtime acs.Runtime
	// Blobs keeps workspace archives (nil: no archive on delete).
	Blobs acs.Blobs
	// Sealer seals stored secrets and LLM keys.
	Sealer acs.Sealer
	// Placer, when set, places starts as they are submitted when that
	// needs no wait (see startflow.Service.Placer).
	Placer startflow.Placer
	// Flow is the start-flow and lifecycle configuration; Build applies
	// its defaults.
	Flow startflow.Config
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// Set is the control plane's services over one set of adapters, as Build
// makes it.
type Set struct {
	Accounts      *accounts.Service
	Conversations *conversations.Service
	// Sandboxes is the sandbox lifecycle, which the reconciler runs too.
	Sandboxes *sandboxes.Lifecycle
	Starts    *startflow.Service
	GitRepos  *gitrepos.Service
	// Now is the clock every service of the set reads.
	Now func() time.Time

	adapters Adapters
}

// Build returns the services over a.
func Build(a Adapters) *Set {
	if a.Now == nil {
		a.Now = time.Now
	}
	a.Flow = a.Flow.Defaults()
	life := &sandboxes.Lifecycle{Store: a.Store, Runtime: a.Runtime, Blobs: a.Blobs, Config: a.Flow.Sandboxes, Now: a.Now}
	acc := accounts.New(a.Store, a.Sealer, a.Now)
	return &Set{
		Accounts: acc,
		Conversations: &conversations.Service{Store: a.Store, Sealer: a.Sealer, Life: life,
			ResumeWait: a.Flow.Sandboxes.ResumeWait, Now: a.Now},
		Sandboxes: life,
		Starts:    &startflow.Service{Store: a.Store, Queue: a.Queue, Sealer: a.Sealer, Lifecycle: life, Placer: a.Placer, Now: a.Now},
		GitRepos:  &gitrepos.Service{Token: acc.ProviderToken, Host: a.Flow.GitHost},
		Now:       a.Now,
		adapters:  a,
	}
}

// Only returns the services of s over only the adapters needs declares
// (config.NeedQueue, config.NeedRuntime, config.NeedBlobs), besides the
// store and the sealer. Each other adapter fails with ErrUnwired and logs
// the route's name. A route's function links and is granted only what its
// Needs declares, so serving each route on Only makes local mode behave
// as production does, and tests catch a wrong Needs.
func (s *Set) Only(route string, needs config.Need) *Set {
	a := s.adapters
	if needs&config.NeedQueue == 0 {
		a.Queue = unwiredQueue{route}
	}
	if needs&config.NeedRuntime == 0 {
		a.Runtime = unwiredRuntime{route}
	}
	if needs&config.NeedBlobs == 0 {
		a.Blobs = unwiredBlobs{route}
	}
	return Build(a)
}
