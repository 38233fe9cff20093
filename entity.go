package asidekit

import (
	"context"
	"reflect"

	"github.com/asidekit/asidekit/cacheaside"
	"github.com/asidekit/asidekit/internal/owner"
	"github.com/asidekit/asidekit/repo"
)

// ErrNamespaceCollision is repo.ErrNamespaceCollision, which NewEntity
// returns too: another owner holds the entity's name in the namespace.
var ErrNamespaceCollision = repo.ErrNamespaceCollision

// NewEntity returns the cacheaside entity name on the Kit's Cache after
// claiming name in the Kit's namespace, as repo.New claims a repository's
// (see "Ownership" in package repo). The owner recorded is T's Go type
// (package path and name): another instance of the same program is the
// same owner, while an entity of that name caching another type — another
// service's, or a repository's rows — fails with ErrNamespaceCollision,
// and NewEntity writes nothing. An entity shared on purpose is made with
// cacheaside.NewEntity on Kit.Cache(), which checks nothing; after
// renaming or moving T, delete the name's record first (HDEL
// <namespace>:owners <name>). When Redis does not answer within
// repo.ClaimTimeout, NewEntity fails open: it logs a warning (log/slog)
// and returns the entity.
func NewEntity[T any](k *Kit, name string, p cacheaside.Policy) (*cacheaside.Entity[T], error) {
	e, err := cacheaside.NewEntity[T](k.cache, name, p)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), repo.ClaimTimeout)
	defer cancel()
	t := reflect.TypeFor[T]()
	typ := t.String()
	if t.PkgPath() != "" {
		typ = t.PkgPath() + "." + t.Name()
	}
	collision, _ := owner.Check(ctx, k.cfg.Redis, k.cfg.Namespace, name, owner.Record{Owner: "go type " + typ},
		false, ErrNamespaceCollision, repo.ErrOwnershipUnchecked,
		"set a distinct Namespace or entity name (or use cacheaside.NewEntity on Kit.Cache() to share it on purpose)")
	if collision != nil {
		return nil, collision
	}
	return e, nil
}
