package agentwire

// GitChange is one changed file of a work tree (GET /api/git/changes).
type GitChange struct {
	// Status is ADDED, DELETED, UPDATED or MOVED.
	Status string `json:"status"`
	// Path is the file's slash-separated path relative to the repository
	// root; for MOVED it is the new path.
	Path string `json:"path"`
}

// GitDiff is the original and the modified content of one file (GET
// /api/git/diff). A nil field means the file does not exist on that side.
type GitDiff struct {
	Modified *string `json:"modified" acs:"emitnull"`
	Original *string `json:"original" acs:"emitnull"`
}
