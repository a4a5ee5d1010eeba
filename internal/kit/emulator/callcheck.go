package emulator

import (
	"fmt"
	"time"
)

// Overrun replays the recorded calls of an action ("" for every action)
// through the token bucket b, full at the first call, and describes the
// first call that found it short by more than one token (the slack for
// the time between a client's send and the emulator's record); "" when
// the calls kept within b. Tests use it to check a client's rate limits
// from the emulator's side, e.g. that no burst follows an outage.
func (b Bucket) Overrun(calls []Call, action string) string {
	tokens, last, n := b.Size, time.Time{}, 0
	for _, c := range calls {
		if action != "" && c.Action != action {
			continue
		}
		if !last.IsZero() {
			tokens = min(b.Size, tokens+b.Refill*c.Time.Sub(last).Seconds())
		}
		last, n = c.Time, n+1
		tokens--
		if tokens < -1 {
			return fmt.Sprintf("call %d (%s at %s) found %.1f tokens", n, c.Action, c.Time.Format("15:04:05.000"), tokens)
		}
	}
	return ""
}
