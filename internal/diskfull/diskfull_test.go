package diskfull_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
	"testing"

	"github.com/acs-project/acs/internal/diskfull"
)

func TestIs(t *testing.T) {
	cases := []struct {
		err  error
		want bool
	}{
		{nil, false},
		{syscall.ENOSPC, true},
		{syscall.EDQUOT, true},
		{&fs.PathError{Op: "write", Path: "/x", Err: syscall.ENOSPC}, true},
		{fmt.Errorf("append events: %w", &fs.PathError{Op: "write", Path: "/x", Err: syscall.EDQUOT}), true},
		{fmt.Errorf("file resize error: %s", syscall.ENOSPC), true}, // flattened by a library
		{syscall.EIO, false},
		{os.ErrNotExist, false},
		{errors.New("disk quota"), false},
	}
	for _, c := range cases {
		if got := diskfull.Is(c.err); got != c.want {
			t.Errorf("Is(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
