// Package eventrecorder bounds the events the operator records. It is
// apart from package bounded so that bounded stays free of
// controller-runtime, and the pure planning packages can use it.
package eventrecorder

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/eni-operator/eni-operator/internal/bounded"
)

// Bounded wraps an event recorder so that no note exceeds
// bounded.EventNote: the API server refuses longer events, and the event
// is then lost.
func Bounded(r recorder.EventRecorder) recorder.EventRecorder {
	if r == nil {
		return nil
	}
	return boundedRecorder{r}
}

type boundedRecorder struct{ next recorder.EventRecorder }

func (b boundedRecorder) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) { //nolint:revive // implements recorder.EventRecorder
	b.next.Eventf(regarding, related, eventtype, reason, action, "%s", bounded.Truncate(fmt.Sprintf(note, args...), bounded.EventNote))
}

func (b boundedRecorder) AnnotatedEventf(regarding, related runtime.Object, annotations map[string]string, eventtype, reason, action, note string, args ...any) { //nolint:revive // implements recorder.EventRecorder
	b.next.AnnotatedEventf(regarding, related, annotations, eventtype, reason, action, "%s", bounded.Truncate(fmt.Sprintf(note, args...), bounded.EventNote))
}
