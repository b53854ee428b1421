package services

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/acs-project/acs/shared/acs"
)

// ErrUnwired is what an adapter a route did not declare answers: a
// deployment bug (the route table's Needs is wrong), never the caller's.
var ErrUnwired = errors.New("adapter not wired for this route")

func unwired(route, what string) error {
	slog.Error("services: a route used an adapter its Needs does not declare", "route", route, "adapter", what)
	return fmt.Errorf("route %s: %s: %w", route, what, ErrUnwired)
}

type unwiredQueue struct{ route string }

func (u unwiredQueue) Send(context.Context, acs.Message, time.Duration) error {
	return unwired(u.route, "queue")
}
func (u unwiredQueue) Receive(context.Context, int, time.Duration, time.Duration) ([]acs.Delivery, error) {
	return nil, unwired(u.route, "queue")
}
func (u unwiredQueue) Delete(context.Context, string) error { return unwired(u.route, "queue") }
func (u unwiredQueue) Delay(context.Context, string, time.Duration) error {
	return unwired(u.route, "queue")
}

type unwiredRuntime struct{ route string }

func (u unwiredRuntime) Start(context.Context, acs.StartRequest) (acs.RuntimeStatus, error) {
	return acs.RuntimeStatus{}, unwired(u.route, "runtime")
}
func (u unwiredRuntime) Status(context.Context, string) (acs.RuntimeStatus, error) {
	return acs.RuntimeStatus{}, unwired(u.route, "runtime")
}
func (u unwiredRuntime) Pause(context.Context, string) error { return unwired(u.route, "runtime") }
func (u unwiredRuntime) Resume(context.Context, string, string, map[string]string) (acs.RuntimeStatus, error) {
	return acs.RuntimeStatus{}, unwired(u.route, "runtime")
}
func (u unwiredRuntime) Delete(context.Context, string) error { return unwired(u.route, "runtime") }
func (u unwiredRuntime) Archive(context.Context, string, io.Writer) error {
	return unwired(u.route, "runtime")
}

type unwiredBlobs struct{ route string }

func (u unwiredBlobs) Put(context.Context, string, io.Reader) error { return unwired(u.route, "blobs") }
func (u unwiredBlobs) Get(context.Context, string) (io.ReadCloser, error) {
	return nil, unwired(u.route, "blobs")
}
func (u unwiredBlobs) Delete(context.Context, string) error { return unwired(u.route, "blobs") }
func (u unwiredBlobs) List(context.Context, string) ([]string, error) {
	return nil, unwired(u.route, "blobs")
}
