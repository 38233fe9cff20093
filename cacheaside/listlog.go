package cacheaside

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/asidekit/asidekit/internal/testswitch"
)

// A change-data-capture reader (repo/cdc) patches lists too: it knows,
// for a change whose old and new rows the log carries, where the row was
// and is in each list, and it reads the log in commit order. But it
// patches after the fact, by a lag, so a page loaded meanwhile may hold
// the change already and a later one of the same row too; a patch applied
// over it would take the row back. So a log patch line names its
// transaction ("@<position> <xid> <patch>"), a reader loads a page with
// the database's snapshot, and skips a log line whose transaction the
// snapshot sees (Logged; package repo keeps the snapshot). listgen.lua
// appends log lines only to a generation that carries log lines alone, in
// position order.

// LogPos is where a change read from the database's log committed: the
// position of its transaction's commit (a PostgreSQL LSN) and the
// transaction's id.
type LogPos struct {
	LSN uint64
	Xid uint32
}

// PatchFromLog is the effect of a change read from the database's log on
// list id of g: line (a patch, as Patch appends) is appended to the list's
// generation, named by pos, if every line the generation carries came
// from the log too and the last of them committed before pos; otherwise
// the list is bumped. The PatchFromLog effects of one list in one Effects
// are one script call, their lines in the order added, which must be
// commit order. Done again, it finds its lines there already, and bumps.
// It is counted in g.Stats when done.
func PatchFromLog(g *ListGenerations, id string, pos LogPos, line string) Effect {
	l := "@" + fmt.Sprintf("%016x", pos.LSN) + " " + strconv.FormatUint(uint64(pos.Xid), 10) + " " + line
	return Effect{kind: effectPatchLog, lists: g, ids: []string{id}, lines: []string{l}}
}

// Logged splits a generation's line that PatchFromLog appended into its
// transaction's id and its patch; logged is false for a writer's line
// (Patch), and for a line that does not parse.
func Logged(line string) (xid uint32, patch string, logged bool) {
	rest, ok := strings.CutPrefix(line, "@")
	if !ok || len(rest) < 17 || rest[16] != ' ' {
		return 0, "", false
	}
	x, patch, ok := strings.Cut(rest[17:], " ")
	if !ok {
		return 0, "", false
	}
	n, err := strconv.ParseUint(x, 10, 32)
	if err != nil {
		return 0, "", false
	}
	return uint32(n), patch, true
}

// patchLog appends lines (PatchFromLog's, in commit order) to the
// generation of list id, or bumps it (listgen.lua); patched reports
// which.
func (g *ListGenerations) patchLog(ctx context.Context, id string, lines []string) (patched bool, err error) {
	key, err := g.Key(id)
	if err != nil {
		return false, err
	}
	first, mode := lines[0][1:17], "log"
	if testswitch.LogOrderOff.Load() { // append to whatever the generation is now
		cur, err := g.c.client.Get(ctx, key).Result()
		if err != nil && !errors.Is(err, redis.Nil) { // absent: the script bumps
			return false, err
		}
		first, mode = cur, "patch"
	}
	return g.appendLines(ctx, key, mode, first, lines)
}
