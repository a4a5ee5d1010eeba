package tagger

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/eni-operator/eni-operator/internal/bounded"
	"github.com/eni-operator/eni-operator/internal/tagger/podcache"
	"github.com/eni-operator/eni-operator/internal/tagger/tagplan"
)

// The messages the tagger writes stay short whatever the annotation or
// EC2 said: a few problems listed, the rest counted, keys quoted in short
// pieces, the whole within bounded.Message.
func TestMessagesAreBounded(t *testing.T) {
	longKey := strings.Repeat("k", 200)
	manyLong := map[string]string{}
	for i := range 5000 {
		manyLong[fmt.Sprintf("%s-%04d", longKey, i)] = strings.Repeat("v", 300)
	}
	_, manyErr := tagplan.Policy{}.Desired("shop", manyLong)
	_, oneErr := tagplan.Policy{}.Desired("shop", map[string]string{strings.Repeat("K", 30000): "v"})
	_, reservedErr := tagplan.Policy{}.Desired("shop", map[string]string{"eni-operator.io/cluster": "c", "eni-operator.io/nodeeni": "x", "eni-operator.io/nodeeni-uid": "u"})
	_, pairErr := tagplan.ParseAnnotation("a=1," + strings.Repeat("x", 30000))
	_, jsonErr := tagplan.ParseAnnotation(`{"` + strings.Repeat("j", 30000) + `":1}`)
	_, dupErr := tagplan.ParseAnnotation(`{"` + strings.Repeat("d", 15000) + `":"1","` + strings.Repeat("d", 15000) + `":"2"}`)
	_, hugeErr := tagplan.ParseAnnotation(strings.Repeat("h", 220<<10))

	tests := []struct {
		name string
		msg  string
		want []string // substrings
		max  int      // bytes; bounded.Message unless set
	}{
		{name: "5000 long keys", msg: invalidMessage(DefaultAnnotationKey, manyErr),
			want: []string{"annotation eni-tagger.io/tags is invalid: 5000 tags asked for", "(205 bytes): key is 205 characters", "more"}},
		{name: "one 30 KB key", msg: invalidMessage(DefaultAnnotationKey, oneErr), want: []string{"(30000 bytes): key is 30000 characters, the limit is 127"}, max: 300},
		{name: "reserved keys, all named", msg: invalidMessage(DefaultAnnotationKey, reservedErr),
			want: []string{`"eni-operator.io/cluster": keys starting with eni-operator.io/ are reserved`, `"eni-operator.io/nodeeni"`, `"eni-operator.io/nodeeni-uid"`}},
		{name: "pair without =", msg: invalidMessage(DefaultAnnotationKey, pairErr), want: []string{"entry 2 (", "(30000 bytes)) is not key=value"}, max: 300},
		{name: "JSON non-string value", msg: invalidMessage(DefaultAnnotationKey, jsonErr), want: []string{"(30000 bytes) must be a JSON string, got a number"}, max: 300},
		{name: "JSON duplicate", msg: invalidMessage(DefaultAnnotationKey, dupErr), want: []string{"duplicate key", "(15000 bytes)"}, max: 300},
		{name: "over the size limit", msg: invalidMessage(DefaultAnnotationKey, hugeErr), want: []string{"is 225280 bytes, over the limit of 32768", "not read"}, max: 300},
		{name: "EC2 error", msg: errorText(errors.Join(errors.New(strings.Repeat("e", 100000)), errors.New("second\nline"))), want: []string{"eee…"}, max: bounded.Message / 2},
		{name: "dry-run description", msg: describe(manyLong), want: []string{`k…="vvv`, `…" (300 bytes)`, "and 49"}, max: bounded.Message / 3},
		{name: "shared conflicts", msg: conflictsText(sharedConflicts()), want: []string{`"Team"`, "and 95 more"}, max: bounded.Message / 2},
		{name: "ownership conflict", msg: tagplan.PlanTags(tagplan.PlanInput{Desired: map[string]string{"a": "1"}, ENITags: map[string]string{HashTag: strings.Repeat("z", 256)}}).Conflict,
			want: []string{"(256 bytes), which is neither ours"}, max: 400},
	}
	for _, tt := range tests {
		max := tt.max
		if max == 0 {
			max = bounded.Message
		}
		if len(tt.msg) > max {
			t.Errorf("%s: message is %d bytes, bound %d: %.300q…", tt.name, len(tt.msg), max, tt.msg)
		}
		for _, w := range tt.want {
			if !strings.Contains(tt.msg, w) {
				t.Errorf("%s: message %.600q does not contain %q", tt.name, tt.msg, w)
			}
		}
		if n := strings.Count(tt.msg, "tag \""); n > bounded.Items {
			t.Errorf("%s: lists %d problems, at most %d", tt.name, n, bounded.Items)
		}
	}
}

// 100 pods on one shared ENI disagree on 100 keys.
func sharedConflicts() map[string]string {
	wants := map[string]map[string]string{}
	for p := range 100 {
		tags := map[string]string{"Team": fmt.Sprint("team-", p)}
		for k := range 99 {
			tags[fmt.Sprint("key-", k)] = fmt.Sprint(strings.Repeat("v", 250), p)
		}
		wants[fmt.Sprintf("ns/pod-with-a-long-name-%03d", p)] = tags
	}
	_, conflicts := tagplan.MergeShared(wants)
	for k, v := range conflicts {
		if len(v) > 2*bounded.Message {
			panic(fmt.Sprintf("conflict text of %s is %d bytes", k, len(v)))
		}
	}
	return conflicts
}

// An annotation over the limit is refused before it is read: the cost
// does not depend on what it holds, and it is not parsed at all.
func TestParseAnnotationRefusesOversizeInputUnread(t *testing.T) {
	valid := `{"Team":"` + strings.Repeat("x", tagplan.MaxAnnotationBytes-len(`{"Team":""}`)) + `"}`
	if len(valid) != tagplan.MaxAnnotationBytes {
		t.Fatalf("built %d bytes", len(valid))
	}
	if _, err := tagplan.ParseAnnotation(valid); err != nil {
		t.Errorf("an annotation of exactly MaxAnnotationBytes was refused: %.200v", err)
	}
	for _, s := range []string{valid + " ", strings.Repeat("{", tagplan.MaxAnnotationBytes+1), strings.Repeat("a=b,", 60000)} {
		_, err := tagplan.ParseAnnotation(s)
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("is %d bytes, over the limit of %d", len(s), tagplan.MaxAnnotationBytes)) {
			t.Errorf("ParseAnnotation(%d bytes) = %.200v", len(s), err)
		}
	}
	// The limit leaves room for the largest valid tag set: 49 tags (and
	// the token) of 127-character keys and 256-character values, as JSON.
	big := map[string]string{}
	for i := range tagplan.MaxTagsPerResource - 1 {
		big[fmt.Sprintf("%0127d", i)] = strings.Repeat("v", tagplan.MaxValueLength)
	}
	var b strings.Builder
	b.WriteString("{")
	i := 0
	for k, v := range big {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, "%q:%q", k, v)
		i++
	}
	b.WriteString("}")
	if b.Len() > tagplan.MaxAnnotationBytes/2+4096 {
		t.Errorf("the largest valid annotation is %d bytes; the limit %d has less headroom than documented", b.Len(), tagplan.MaxAnnotationBytes)
	}
	tags, err := tagplan.ParseAnnotation(b.String())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := (tagplan.Policy{}).Desired("shop", tags); err != nil {
		t.Errorf("the largest valid tag set was refused: %.300v", err)
	}
}

// The pod cache keeps a short stand-in for an oversize annotation, which
// ParseAnnotation refuses with the original's size; a change to the
// annotation changes the stand-in, and small annotations are kept as is.
func TestPodCacheKeepsAStandInForOversizeAnnotations(t *testing.T) {
	trim := podcache.Trim(PodMarks(DefaultAnnotationKey))
	pod := func(tags, applied string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Annotations: map[string]string{
			DefaultAnnotationKey: tags, LastAppliedTagsAnnotation: applied, "other": strings.Repeat("o", 1000)}}}
	}
	huge1, huge2 := strings.Repeat("a=b,", 55000), strings.Repeat("c=d,", 55000)
	got := map[string]*corev1.Pod{}
	for name, p := range map[string]*corev1.Pod{"huge1": pod(huge1, huge1), "huge2": pod(huge2, "{}"), "small": pod("Team=Dev", `{"Team":"Dev"}`)} {
		out, err := trim(p)
		if err != nil {
			t.Fatal(err)
		}
		got[name] = out.(*corev1.Pod)
	}
	a1, a2 := got["huge1"].Annotations[DefaultAnnotationKey], got["huge2"].Annotations[DefaultAnnotationKey]
	if len(a1) > 200 || len(got["huge1"].Annotations[LastAppliedTagsAnnotation]) > 200 || a1 == a2 {
		t.Errorf("stand-ins %q and %q", a1, a2)
	}
	if _, err := tagplan.ParseAnnotation(a1); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("it is %d bytes, over the limit", len(huge1))) {
		t.Errorf("ParseAnnotation(stand-in) = %v", err)
	}
	if a := got["small"].Annotations; a[DefaultAnnotationKey] != "Team=Dev" || a[LastAppliedTagsAnnotation] != `{"Team":"Dev"}` || a["other"] != "" {
		t.Errorf("small annotations: %v", a)
	}
}
