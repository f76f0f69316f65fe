package redisconn

import (
	"os"
	"testing"

	"github.com/leasegate/leasegate/internal/redistest"
)

func TestMain(m *testing.M) { os.Exit(redistest.Run(m)) }
