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
	// pages first, then one slice of the exact size: appending page after
	// page would copy the growing slice again and again and leave it up
	// to twice too large (a VPC's ENIs: 100,000 of them, held until the
	// next refresh).
	var pages [][]T
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		pages = append(pages, items(page))
	}
	return slices.Concat(pages...), nil
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
