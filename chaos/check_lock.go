package chaos

import (
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/anishathalye/porcupine"
)

// checkLock finds two holders of the lock whose fenced writes were both
// accepted and whose holds overlapped. A hold's span is the part of its
// acquisition the holder relied on (see holdOnce), so with a correct lock
// two spans never overlap, whatever the faults.
func checkLock(ops []Op) (holds int, vs []Violation) {
	accepted := map[string]bool{}
	for _, op := range ops {
		if op.Kind == OpFenced && op.Applied == Yes {
			accepted[op.Token] = true
		}
	}
	var hs []Op
	for _, op := range ops {
		if op.Kind != OpHold {
			continue
		}
		holds++
		if op.Token != "" && accepted[op.Token] && op.End > op.Start {
			hs = append(hs, op)
		}
	}
	sort.Slice(hs, func(i, j int) bool { return hs[i].Start < hs[j].Start })
	last := 0 // the hold that ends last among those before hs[i]
	for i := 1; i < len(hs); i++ {
		prev, h := hs[last], hs[i]
		if h.Start < prev.End {
			vs = append(vs, Violation{
				Check: "lock", At: h.Start, Ops: []int{prev.ID, h.ID},
				Msg: fmt.Sprintf("proc %d held the lock (fence %d) from %v to %v while proc %d held it (fence %d) from %v to %v, and both had fenced writes accepted",
					h.Proc, h.Value, h.Start, h.End, prev.Proc, prev.Value, prev.Start, prev.End),
			})
		}
		if h.End > prev.End {
			last = i
		}
	}
	return holds, vs
}

// fenceState is the fenced row's state in the model: the last accepted
// fence and token.
type fenceState struct {
	fence int64
	token string
}

type fenceInput struct {
	fence int64
	token string
}

// fenceModel is the sequential specification of the fenced row: a write
// is accepted if and only if its fence is above the stored one, or equal
// with the same token. A write whose outcome is unknown may or may not
// have happened (a nondeterministic step).
var fenceModel = porcupine.NondeterministicModel{
	Init: func() []any { return []any{fenceState{}} },
	Step: func(state, input, output any) []any {
		s, in, out := state.(fenceState), input.(fenceInput), output.(Applied)
		ok := in.fence > s.fence || (in.fence == s.fence && in.token == s.token)
		next := fenceState(in)
		switch {
		case out == Maybe && ok:
			return []any{s, next}
		case out == Maybe, out == No && !ok:
			return []any{s}
		case out == Yes && ok:
			return []any{next}
		}
		return nil
	},
	DescribeOperation: func(input, output any) string {
		in := input.(fenceInput)
		return fmt.Sprintf("write(fence %d, %.8s) -> %v", in.fence, in.token, output)
	},
}

// checkFenced checks with porcupine that the fenced writes' history is
// linearizable against fenceModel. A write whose outcome is unknown may
// have taken effect at any time after it began.
func checkFenced(ops []Op, timeout time.Duration) (n int, vs []Violation, unknown bool) {
	var hist []porcupine.Operation
	for _, op := range ops {
		if op.Kind != OpFenced {
			continue
		}
		ret := int64(op.End)
		if op.Applied == Maybe {
			ret = math.MaxInt64
		}
		hist = append(hist, porcupine.Operation{
			ClientId: op.Proc, Input: fenceInput{fence: op.Value, token: op.Token},
			Call: int64(op.Start), Output: op.Applied, Return: ret,
		})
	}
	switch porcupine.CheckOperationsTimeout(fenceModel.ToModel(), hist, timeout) {
	case porcupine.Illegal:
		vs = append(vs, Violation{Check: "fenced", Msg: "the fenced writes' history is not linearizable (porcupine)"})
	case porcupine.Unknown:
		unknown = true
	}
	return len(hist), vs, unknown
}
