package cdc_test

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/asidekit/asidekit/internal/faultproxy"
	"github.com/asidekit/asidekit/internal/testkit"
	"github.com/asidekit/asidekit/repo/cdc"
	"github.com/asidekit/asidekit/testcontainers"
)

// TestRun_notLogical_warnsOnce is issue 26: Run on a server without
// wal_level=logical retried forever and said nothing.
func TestRun_notLogical_warnsOnce(t *testing.T) {
	pg := testcontainers.Postgres(t)
	var level string
	if err := pg.DB.Raw("SHOW wal_level").Scan(&level).Error; err != nil {
		t.Fatal(err)
	}
	if level == "logical" {
		t.Skip("the test server's wal_level is logical; TestRun_outage_warnsOnceThenInfo covers the logging")
	}
	logs := testkit.CaptureLogs(t)
	inv, err := cdc.New(pg.DSN, &cdc.Options{Slot: "test_not_logical"})
	if err != nil {
		t.Fatal(err)
	}
	stop := run(t, inv)
	waitFor(t, "five failed attempts", func() bool { return inv.Stats().Errors >= 5 })
	stop()

	warns := logs.At(slog.LevelWarn, "asidekit: cdc:")
	if len(warns) != 1 {
		t.Fatalf("warnings %q over %d attempts, want one", warns, inv.Stats().Errors)
	}
	if !strings.Contains(warns[0], "wal_level is not logical") || !strings.Contains(warns[0], "attempts=1") {
		t.Errorf("warning %q, want the cause and the attempt count", warns[0])
	}
	s := inv.Stats()
	if !errors.Is(s.LastError, cdc.ErrNotLogical) {
		t.Errorf("LastError %v, want ErrNotLogical", s.LastError)
	}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var decoded struct{ LastError string }
	if err := json.Unmarshal(b, &decoded); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(decoded.LastError, "wal_level is not logical") {
		t.Errorf("Stats as JSON: %s, want the last error's message", b)
	}
}

// TestRun_outage_warnsOnceThenInfo cuts the database off before Run starts
// and lets it through once Run has failed a few times: one warning, then
// one Info when the process takes the slot.
func TestRun_outage_warnsOnceThenInfo(t *testing.T) {
	e := redisEnv(t)
	p := pgProxy(t, e.dsn)
	p.Cut()
	e.dsn = proxiedDSN(t, e.dsn, p.Addr())
	logs := testkit.CaptureLogs(t)
	inv := e.invalidator(t, cdc.Options{})
	stop := run(t, inv)
	waitFor(t, "three failed attempts", func() bool { return inv.Stats().Errors >= 3 })
	p.Heal()
	waitFor(t, "an Info", func() bool { return len(logs.At(slog.LevelInfo, "asidekit: cdc:")) > 0 })
	stop()

	warns := logs.At(slog.LevelWarn, "asidekit: cdc:")
	if len(warns) != 1 || !strings.Contains(warns[0], "attempts=1") || !strings.Contains(warns[0], "slot="+e.slot) {
		t.Errorf("warnings %q, want one, of the first attempt on the test's slot", warns)
	}
	infos := logs.At(slog.LevelInfo, "asidekit: cdc:")
	if len(infos) != 1 || !strings.Contains(infos[0], "applying") {
		t.Errorf("infos %q, want one: applying again", infos)
	}
}

func TestStats_JSON_noError(t *testing.T) {
	b, err := json.Marshal(cdc.Stats{Active: true})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "LastError") {
		t.Errorf("Stats without an error as JSON: %s, want no LastError", b)
	}
}

// pgProxy returns a fault proxy in front of the server of dsn.
func pgProxy(t *testing.T, dsn string) *faultproxy.Proxy {
	t.Helper()
	cfg, err := pgconn.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasPrefix(cfg.Host, "/") {
		t.Skip("the test server listens on a Unix socket; the proxy is TCP")
	}
	p, err := faultproxy.New(net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port))))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// proxiedDSN is dsn with the server at addr.
func proxiedDSN(t *testing.T, dsn, addr string) string {
	t.Helper()
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	if u, err := url.Parse(dsn); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
		u.Host = addr
		return u.String()
	}
	return dsn + " host=" + host + " port=" + port // key=value: the last one counts
}
