package chaos

import "time"

// Violation is one broken promise found in a history.
type Violation struct {
	Check string        `json:"check"`
	Key   int64         `json:"key,omitempty"`
	At    time.Duration `json:"at"`
	Msg   string        `json:"msg"`
	Ops   []int         `json:"op_ids,omitempty"` // ids of the operations involved
}
