package ec2

import (
	"context"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
)

// pager is what the SDK's paginators have in common.
type pager[P any] interface {
	HasMorePages() bool
	NextPage(context.Context, ...func(*ec2.Options)) (P, error)
}

// allPages reads every page and returns the items of all of them, or the
// first error.
func allPages[P, T any](ctx context.Context, p pager[P], items func(P) []T) ([]T, error) {
	var out []T
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		out = append(out, items(page)...)
	}
	return out, nil
}

// allPagesByID reads every page and orders the items by ID: a stable
// order for callers that take the first match of a name.
func allPagesByID[P, T any](ctx context.Context, p pager[P], items func(P) []T, id func(T) string) ([]T, error) {
	out, err := allPages(ctx, p, items)
	slices.SortFunc(out, func(a, b T) int { return strings.Compare(id(a), id(b)) })
	return out, err
}

// convert maps SDK values to the operator's types.
func convert[S, T any](in []S, from func(S) T) []T {
	out := make([]T, 0, len(in))
	for _, s := range in {
		out = append(out, from(s))
	}
	return out
}
