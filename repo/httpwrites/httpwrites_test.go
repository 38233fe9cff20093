package httpwrites_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/asidekit/asidekit/cacheaside"
	"github.com/asidekit/asidekit/internal/sample"
	"github.com/asidekit/asidekit/repo"
	"github.com/asidekit/asidekit/repo/httpwrites"
	"github.com/asidekit/asidekit/testcontainers"
)

func TestMain(m *testing.M) { testcontainers.Main(m) }

// A service on a primary and a replica whose replay is paused: a request
// that writes two rows with plain GORM in a repo.Transaction (nothing
// keys them) gets the position back in a cookie; the client's next request
// brings it and reads the row from the primary, while a client without
// the cookie reads the replica, which lacks it.
func TestNew_readYourWrites(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	sr := testcontainers.NewStreamingReplica(t, 0)
	if err := sample.Migrate(sr.Primary.DB); err != nil {
		t.Fatal(err)
	}
	rn := testcontainers.Redis(t)
	cache, err := cacheaside.New(rn.Client, &cacheaside.Options{Namespace: rn.Namespace})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cache.Close() })
	users, err := repo.New[sample.User, int64](sr.Primary.DB, cache, &repo.Options{ReadDB: sr.Replica})
	if err != nil {
		t.Fatal(err)
	}

	mux := http.NewServeMux()
	mux.HandleFunc("POST /users/{id}", func(w http.ResponseWriter, r *http.Request) {
		id, _ := strconv.ParseInt(r.PathValue("id"), 10, 64)
		err := repo.Transaction(r.Context(), sr.Primary.DB, func(tx *repo.Tx) error {
			return tx.DB().Create([]sample.User{
				{ID: id, Email: fmt.Sprint(id, "@example.com"), Name: r.FormValue("name")},
				{ID: id + 1, Email: fmt.Sprint(id+1, "@example.com"), Name: r.FormValue("name")},
			}).Error
		})
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
		}
	})
	mux.HandleFunc("GET /users/{id}", func(w http.ResponseWriter, r *http.Request) {
		id, _ := strconv.ParseInt(r.PathValue("id"), 10, 64)
		u, err := users.Get(r.Context(), id)
		switch {
		case errors.Is(err, repo.ErrNotFound):
			http.NotFound(w, r)
		case err != nil:
			http.Error(w, err.Error(), http.StatusInternalServerError)
		default:
			fmt.Fprint(w, u.Name)
		}
	})
	srv := httptest.NewServer(httpwrites.New(mux, &httpwrites.Options{Header: "Asidekit-Lsn"}))
	t.Cleanup(srv.Close)
	jar, _ := cookiejar.New(nil)
	client := &http.Client{Jar: jar}
	other := &http.Client{}
	get := func(c *http.Client, id int64) (int, string) {
		t.Helper()
		resp, err := c.Get(fmt.Sprint(srv.URL, "/users/", id))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b [64]byte
		n, _ := resp.Body.Read(b[:])
		return resp.StatusCode, string(b[:n])
	}

	if code, _ := get(other, 99); code != http.StatusNotFound {
		t.Fatalf("warm-up read: %d", code)
	}
	// Rows 7 and 8 read (a miss starts their versions), then written and
	// deleted through repo: their versions record a position the replica
	// replays (a miss of an id whose version records none, or that has
	// none, loads from the primary).
	for _, id := range []int64{7, 8} {
		if code, _ := get(other, id); code != http.StatusNotFound {
			t.Fatalf("read before the row exists: %d", code)
		}
		if err := users.Create(ctx, &sample.User{ID: id, Email: fmt.Sprint("old", id, "@example.com"), Name: "Old"}); err != nil {
			t.Fatal(err)
		}
		if err := users.Delete(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if err := sr.WaitReplayed(ctx); err != nil {
		t.Fatal(err)
	}
	if err := sr.PauseReplay(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sr.ResumeReplay(context.WithoutCancel(ctx)) }()
	resp, err := client.PostForm(srv.URL+"/users/7", map[string][]string{"name": {"Gil"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	lsn := resp.Header.Get("Asidekit-Lsn")
	if resp.StatusCode != http.StatusOK || lsn == "" || len(resp.Cookies()) != 1 || resp.Cookies()[0].Value != lsn {
		t.Fatalf("write: %d, header %q, cookies %v; want 200 and the position in both", resp.StatusCode, lsn, resp.Cookies())
	}
	// Another row of the write (the cache would keep the replica's "not
	// found" of a row read here: plain writes invalidate nothing).
	if code, _ := get(other, 8); code != http.StatusNotFound {
		t.Fatalf("a client without the cookie: %d; want the replica's 404 (else this test shows nothing)", code)
	}
	if code, body := get(client, 7); code != http.StatusOK || body != "Gil" {
		t.Fatalf("the writer's next request: %d %q; want 200 Gil", code, body)
	}
	// A read sets no cookie; a forged value is ignored.
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/users/9", nil)
	req.Header.Set("Asidekit-Lsn", "0/16B3748")
	resp, err = other.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound || len(resp.Cookies()) != 0 {
		t.Fatalf("a forged position: %d, cookies %v; want the replica's 404 and no cookie", resp.StatusCode, resp.Cookies())
	}
}
