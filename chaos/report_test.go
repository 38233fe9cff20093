package chaos

import (
	"encoding/json"
	"os"
	"testing"
	"time"
)

// A violation of a phase after the main run is written with the phase's
// operations, not the main run's that happen to have the same ids.
func TestWriteFailure_phaseOps(t *testing.T) {
	rn := &run{cfg: Config{OutDir: t.TempDir()}}
	rn.hist.add(Op{Proc: 0, Kind: OpGet, Keys: []int64{1}, Versions: []int64{1}, Start: time.Second, End: time.Second}, nil)
	rn.hist.add(Op{Proc: 0, Kind: OpPut, Keys: []int64{1}, Versions: []int64{2}, Start: time.Second, End: time.Second, Applied: Yes}, nil)
	phase := []Op{
		{ID: 0, Proc: 1, Kind: OpPut, Keys: []int64{replicaBase}, Versions: []int64{2}, Start: 9 * time.Second, End: 9 * time.Second, Applied: Yes},
		{ID: 1, Proc: 0, Kind: OpGet, Keys: []int64{replicaBase}, Versions: []int64{1}, Start: 10 * time.Second, End: 10 * time.Second},
	}
	rn.phaseOps = map[string][]Op{"replica": phase}
	rep := &Report{Violations: []Violation{{Check: "replica", Key: replicaBase, At: 10 * time.Second, Ops: []int{1, 0}, Msg: "stale"}}}
	path, err := rn.writeFailure(rep)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var f failure
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	if len(f.Violations) != 1 || len(f.Violations[0].Ops) != 2 {
		t.Fatalf("failure file: %s", b)
	}
	for _, op := range f.Violations[0].Ops {
		if op.Keys[0] != replicaBase {
			t.Errorf("op %+v is the main run's, want the replica phase's", op)
		}
	}
}
