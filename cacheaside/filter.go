package cacheaside

import "context"

// Filter is a membership pre-filter, typically a Bloom filter
// (*bloom.Filter of asidekit's guard/bloom satisfies it). MightContain
// returns false only for ids that certainly do not exist.
type Filter interface {
	MightContain(ctx context.Context, id string) (bool, error)
}

// BatchFilter is optionally implemented by a Filter that can answer many
// ids in one round trip; GetMany uses it when present. The result has one
// answer per id, in order.
type BatchFilter interface {
	MightContainMany(ctx context.Context, ids []string) ([]bool, error)
}
