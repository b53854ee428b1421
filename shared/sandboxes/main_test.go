package sandboxes_test

import (
	"context"
	"testing"

	"github.com/acs-project/acs/internal/testbin"
)

func TestMain(m *testing.M) { testbin.Main(m) }

var ctx = context.Background()
