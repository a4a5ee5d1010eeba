// Package phases is the controllers' one idiom: a reconcile runs named
// phases in order over one work struct that carries what they learn, and
// any phase may end it early with its result (docs/architecture.md).
package phases

import (
	"context"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Stop ends a reconcile early with its result.
type Stop struct {
	Result reconcile.Result
	Err    error
}

// Done ends the reconcile with err (nil: nothing more to do).
func Done(err error) *Stop { return &Stop{Err: err} }

// After ends the reconcile and asks for another after d.
func After(d time.Duration) *Stop { return &Stop{Result: reconcile.Result{RequeueAfter: d}} }

// Run runs phases in order over w until one returns a Stop, which it
// returns; nil when every phase ran to its end.
func Run[W any](ctx context.Context, w W, phases ...func(context.Context, W) *Stop) *Stop {
	for _, phase := range phases {
		if s := phase(ctx, w); s != nil {
			return s
		}
	}
	return nil
}
