package nodeeni

import (
	"fmt"
	"testing"

	"github.com/eni-operator/eni-operator/internal/nodeeni/eniplan"
)

func TestDistrustLogReportsChangesOnce(t *testing.T) {
	d := newDistrustLog()
	steps := []struct {
		now  map[string]string
		want string
	}{
		{map[string]string{"eni-1": eniplan.UntrustedTaggerTag}, "[eni-1]"},
		{map[string]string{"eni-1": eniplan.UntrustedTaggerTag}, "[]"},
		{map[string]string{"eni-1": eniplan.UntrustedInterfaceType}, "[eni-1]"},
		{map[string]string{}, "[]"},
		{map[string]string{"eni-1": eniplan.UntrustedInterfaceType}, "[eni-1]"},
	}
	for i, s := range steps {
		got := d.update("scope", s.now)
		if g := fmt.Sprint(got); g != s.want && (g != "[]" || s.want != "[]") {
			t.Fatalf("step %d: changed %v, want %s", i, got, s.want)
		}
	}
}
