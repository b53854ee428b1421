package bashapi

import "time"

// SetAuthTimeout shortens the socket auth timeout for a test and returns a
// function restoring it.
func SetAuthTimeout(d time.Duration) (restore func()) {
	old := authTimeout.Swap(int64(d))
	return func() { authTimeout.Store(old) }
}
