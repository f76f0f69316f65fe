package deploy

import (
	"os"
	"testing"

	"github.com/leasegate/leasegate/internal/gatewaytest"
	"github.com/leasegate/leasegate/internal/redistest"
)

func TestMain(m *testing.M) {
	code := redistest.Run(m)
	gatewaytest.RemoveBinary()
	os.Exit(code)
}
