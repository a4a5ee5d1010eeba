package tagger

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestNotFoundRetry(t *testing.T) {
	for _, tc := range []struct {
		missingFor, want time.Duration
	}{
		{0, 30 * time.Second},
		{40 * time.Second, 30 * time.Second},
		{2 * time.Minute, time.Minute},
		{10 * time.Minute, 5 * time.Minute},
		{time.Hour, 10 * time.Minute},
	} {
		if got := notFoundRetry(tc.missingFor); got != tc.want {
			t.Errorf("notFoundRetry(%v) = %v, want %v", tc.missingFor, got, tc.want)
		}
	}
}

func TestMissingFor(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	pod := func(reason string, since time.Duration) *corev1.Pod {
		return &corev1.Pod{Status: corev1.PodStatus{Conditions: []corev1.PodCondition{
			{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(now.Add(-time.Hour))},
			{Type: ConditionType, Status: corev1.ConditionFalse, Reason: reason, LastTransitionTime: metav1.NewTime(now.Add(-since))},
		}}}
	}
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want time.Duration
	}{
		{"not found for 3 minutes", pod(ReasonENINotFound, 3*time.Minute), 3 * time.Minute},
		{"another reason", pod(ReasonInvalidTags, 3*time.Minute), 0},
		{"no condition", &corev1.Pod{}, 0},
	} {
		if got := missingFor(tc.pod, now); got != tc.want {
			t.Errorf("%s: missingFor = %v, want %v", tc.name, got, tc.want)
		}
	}
}
