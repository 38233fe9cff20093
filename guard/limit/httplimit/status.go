package httplimit

import (
	"context"
	"errors"
	"net/http"

	"github.com/asidekit/asidekit/guard/limit"
)

// StatusOf maps an error of the limit package to an HTTP status:
//
//	limit.ErrLimited                        429 Too Many Requests
//	limit.ErrLeaseLost                      409 Conflict
//	limit.ErrInvalid                        400 Bad Request
//	context.Canceled                        499 (the client went away; nginx's code)
//	context.DeadlineExceeded                503 Service Unavailable
//	anything else (Redis failed)            503 Service Unavailable
//
// nil maps to 200. limit.ErrFailedOpen is the error of a call that was
// allowed; StatusOf maps it to 200 as well.
func StatusOf(err error) int {
	switch {
	case err == nil, errors.Is(err, limit.ErrFailedOpen):
		return http.StatusOK
	case errors.Is(err, limit.ErrLimited):
		return http.StatusTooManyRequests
	case errors.Is(err, limit.ErrLeaseLost):
		return http.StatusConflict
	case errors.Is(err, limit.ErrInvalid):
		return http.StatusBadRequest
	case errors.Is(err, context.Canceled):
		return StatusClientClosedRequest
	}
	return http.StatusServiceUnavailable
}

// StatusClientClosedRequest is the status logged for a request whose
// client went away before the answer (nginx's 499); no client sees it.
const StatusClientClosedRequest = 499
