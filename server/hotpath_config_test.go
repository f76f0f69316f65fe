package server_test

import "github.com/leasegate/leasegate/server"

func setAutoPipeline(cfg *server.Config, on bool) { cfg.NoAutoPipeline = !on }
