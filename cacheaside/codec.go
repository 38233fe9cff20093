package cacheaside

import "encoding/json"

// Codec turns values into payload bytes and back. Implementations must be
// safe for concurrent use, and Unmarshal must not keep data after it
// returns.
type Codec interface {
	Marshal(v any) ([]byte, error)
	Unmarshal(data []byte, v any) error
}

// JSON is the default Codec: encoding/json.
type JSON struct{}

// Marshal calls json.Marshal.
func (JSON) Marshal(v any) ([]byte, error) { return json.Marshal(v) }

// Unmarshal calls json.Unmarshal.
func (JSON) Unmarshal(data []byte, v any) error { return json.Unmarshal(data, v) }
