package boltstore

// SetBodyScanBudget sets how many text-index entries (and bytes of text) a
// body search page examines, for tests of pages that end early; the
// returned function restores the defaults.
func SetBodyScanBudget(events, bytes int) (restore func()) {
	e, b := bodyScanEvents, bodyScanBytes
	bodyScanEvents, bodyScanBytes = events, bytes
	return func() { bodyScanEvents, bodyScanBytes = e, b }
}
