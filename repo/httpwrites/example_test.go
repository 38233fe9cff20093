package httpwrites_test

import (
	"net/http"
	"time"

	"github.com/asidekit/asidekit/repo/httpwrites"
)

// A mux whose handlers read and write through repositories with
// r.Context(): a client's requests read what its earlier requests wrote,
// whichever replica serves them.
func ExampleNew() {
	mux := http.NewServeMux()
	h := httpwrites.New(mux, &httpwrites.Options{MaxAge: time.Minute, Secure: true})
	_ = http.ListenAndServe("127.0.0.1:8080", h)
}
