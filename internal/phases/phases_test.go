package phases

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"
)

func TestRunStopsAtTheFirstStop(t *testing.T) {
	boom := errors.New("boom")
	record := func(name string, s *Stop) func(context.Context, *[]string) *Stop {
		return func(_ context.Context, ran *[]string) *Stop {
			*ran = append(*ran, name)
			return s
		}
	}
	for _, c := range []struct {
		name   string
		phases []func(context.Context, *[]string) *Stop
		ran    []string
		want   *Stop
	}{
		{"every phase runs", []func(context.Context, *[]string) *Stop{record("a", nil), record("b", nil)}, []string{"a", "b"}, nil},
		{"an error stops", []func(context.Context, *[]string) *Stop{record("a", Done(boom)), record("b", nil)}, []string{"a"}, Done(boom)},
		{"a requeue stops", []func(context.Context, *[]string) *Stop{record("a", nil), record("b", After(time.Second)), record("c", nil)}, []string{"a", "b"}, After(time.Second)},
		{"done without error stops", []func(context.Context, *[]string) *Stop{record("a", Done(nil)), record("b", nil)}, []string{"a"}, Done(nil)},
	} {
		var ran []string
		got := Run(context.Background(), &ran, c.phases...)
		if !slices.Equal(ran, c.ran) {
			t.Errorf("%s: ran %v, want %v", c.name, ran, c.ran)
		}
		if (got == nil) != (c.want == nil) || (got != nil && (got.Result != c.want.Result || !errors.Is(got.Err, c.want.Err))) {
			t.Errorf("%s: stop %+v, want %+v", c.name, got, c.want)
		}
	}
}
