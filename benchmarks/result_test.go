package benchmarks

import (
	"encoding/json"
	"strings"
	"testing"
)

// A quiet run's JSON has neither "busy" nor "busy_mode" (the commands
// record the burner's mode, "false", whether it ran or not); a busy run's
// has both.
func TestResult_MarshalJSON_busy(t *testing.T) {
	for _, c := range []struct {
		res  Result
		want []string
		not  []string
	}{
		{Result{Scenario: "hit", BusyMode: "false"}, nil, []string{`"busy"`, `"busy_mode"`}},
		{Result{Scenario: "hit", Busy: 2, BusyMode: "neighbour"}, []string{`"busy":2`, `"busy_mode":"neighbour"`}, nil},
	} {
		b, err := json.Marshal(c.res)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range c.want {
			if !strings.Contains(string(b), w) {
				t.Errorf("%s: want %s", b, w)
			}
		}
		for _, n := range c.not {
			if strings.Contains(string(b), n) {
				t.Errorf("%s: want no %s", b, n)
			}
		}
	}
}
