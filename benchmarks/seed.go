package benchmarks

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// ensureUsers makes sure users rows 1..n exist (the Env inserts them once,
// in batches) and returns how many statements that took.
func (e *Env) ensureUsers(ctx context.Context, n int) error {
	e.mu.Lock()
	have := e.users
	e.mu.Unlock()
	if n <= have {
		return nil
	}
	tr := e.track("seed users", int64(n-have))
	defer tr.Done()
	const batch = 500
	now := time.Now().UTC().Truncate(time.Microsecond)
	for lo := have + 1; lo <= n; lo += batch {
		hi := min(lo+batch-1, n)
		rows := make([]Value, 0, hi-lo+1)
		for id := lo; id <= hi; id++ {
			rows = append(rows, sampleUser(int64(id), 200, now))
		}
		if err := e.DB.WithContext(ctx).Create(&rows).Error; err != nil {
			return fmt.Errorf("benchmarks: seed users: %w", err)
		}
		tr.Add(int64(len(rows)))
	}
	e.mu.Lock()
	e.users = n
	e.mu.Unlock()
	return nil
}

// sampleUser returns user id with a name padded so that its JSON is about
// size bytes (never less than the unpadded record).
func sampleUser(id int64, size int, now time.Time) Value {
	u := Value{
		ID:        id,
		Email:     fmt.Sprintf("user%d@example.com", id),
		Name:      fmt.Sprintf("Sample User %d", id),
		CreatedAt: now,
		UpdatedAt: now,
	}
	// {"id":…,"email":"…","name":"…","created_at":"…","updated_at":"…"}
	base := 62 + len(fmt.Sprint(id)) + len(u.Email) + len(u.Name) + 2*len(now.Format(time.RFC3339Nano))
	if pad := size - base; pad > 0 {
		u.Name += " " + strings.Repeat("x", pad-1)
	}
	return u
}
