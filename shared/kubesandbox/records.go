package kubesandbox

import (
	"encoding/json"
	"time"

	"github.com/acs-project/acs/shared/acs"
)

// specRecord is the stored acs.SandboxSpec: the "spec" key of a sandbox's
// record ConfigMap and of a warm runtime's root, and part of a warm
// runtime's pool hash (its env label). Its JSON names are the stored
// format, apart from acs.SandboxSpec's tags, so a renamed domain field
// cannot make existing records unreadable or orphan a warm pool; a field
// added to acs.SandboxSpec fails to compile until it is added here.
type specRecord struct {
	ID         string            `json:"id"`
	Command    []string          `json:"command"`
	CreatedAt  time.Time         `json:"created_at"`
	InitialEnv map[string]string `json:"initial_env"`
	WorkingDir string            `json:"working_dir"`
}

// encodeSpec returns the stored JSON of spec (HTML-escaped, as the
// records have always been written).
func encodeSpec(spec acs.SandboxSpec) string {
	b, _ := json.Marshal(specRecord(spec)) // strings, a map and a time: cannot fail
	return string(b)
}

// decodeSpec reads a stored spec; a missing or unreadable one reads as the
// zero spec (the record's other keys still work).
func decodeSpec(raw string) acs.SandboxSpec {
	var r specRecord
	_ = json.Unmarshal([]byte(raw), &r)
	return acs.SandboxSpec(r)
}
