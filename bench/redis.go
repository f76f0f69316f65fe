package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/leasegate/leasegate/internal/launch"
)

// startRedis starts bin on a free loopback port with no persistence
// (launch.StartRedis) in a temporary directory; stop kills it and
// removes the directory.
func startRedis(bin string) (_ *launch.Redis, stop func(), _ error) {
	path, err := exec.LookPath(bin)
	if err != nil {
		return nil, nil, fmt.Errorf("bench: %s not found (install it, or pass a loopback -redis-url): %w", bin, err)
	}
	dir, err := os.MkdirTemp("", "leasegate-bench-redis-")
	if err != nil {
		return nil, nil, fmt.Errorf("bench: %w", err)
	}
	p, err := launch.StartRedis(launch.RedisSpec{Bin: path, Dir: dir})
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, nil, fmt.Errorf("bench: %w", err)
	}
	return p, func() { p.Kill(); _ = os.RemoveAll(dir) }, nil
}

// checkLoopback refuses a URL whose host is not on this machine: both
// tools load what they talk to (Run its Redis, Load its gateway), so they
// talk only to a loopback address (127.0.0.0/8, ::1, localhost). Host
// names other than localhost are not resolved: they are refused. setting
// names the flag in the errors; schemes, when given, are the only ones
// accepted.
func checkLoopback(setting, raw string, schemes ...string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("%s %q: %w", setting, raw, err)
	}
	if len(schemes) > 0 && !slices.Contains(schemes, u.Scheme) {
		return fmt.Errorf("%s %q: want a %s:// URL", setting, raw, strings.Join(schemes, ":// or "))
	}
	host := u.Hostname()
	if strings.EqualFold(strings.TrimSuffix(host, "."), "localhost") {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("%s %q: host %q is not a loopback address (127.0.0.0/8, ::1, localhost)", setting, raw, host)
}

// RedisStats is what INFO says about the server's work so far.
type RedisStats struct {
	CPU time.Duration // used_cpu_sys + used_cpu_user
	// Calls and Usec per command name (lower case, "evalsha", "time", ...).
	Calls map[string]int64
	Usec  map[string]int64
	// From INFO stats, memory and errorstats when asked for: bytes read
	// from and written to clients, reads from client sockets,
	// used_memory, and the MOVED redirects answered.
	NetIn, NetOut, Reads, UsedMemory, Moved int64
}

// ReadRedisStats reads INFO cpu and commandstats, and the sections of
// extra ("stats", "memory", "errorstats") too.
func ReadRedisStats(ctx context.Context, rdb *redis.Client, extra ...string) (RedisStats, error) {
	txt, err := rdb.Info(ctx, append([]string{"cpu", "commandstats"}, extra...)...).Result()
	if err != nil {
		return RedisStats{}, fmt.Errorf("bench: INFO: %w", err)
	}
	return parseInfo(txt)
}

// parseInfo reads used_cpu_sys, used_cpu_user and the cmdstat_* lines of
// an INFO reply.
func parseInfo(txt string) (RedisStats, error) {
	st := RedisStats{Calls: map[string]int64{}, Usec: map[string]int64{}}
	var sawCPU int
	sc := bufio.NewScanner(strings.NewReader(txt))
	for sc.Scan() {
		k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), ":")
		if !ok {
			continue
		}
		switch {
		case k == "used_cpu_sys" || k == "used_cpu_user":
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return st, fmt.Errorf("bench: INFO %s=%q: %w", k, v, err)
			}
			st.CPU += time.Duration(f * float64(time.Second))
			sawCPU++
		case k == "total_net_input_bytes" || k == "total_net_output_bytes" || k == "total_reads_processed" || k == "used_memory":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return st, fmt.Errorf("bench: INFO %s=%q: %w", k, v, err)
			}
			switch k {
			case "total_net_input_bytes":
				st.NetIn = n
			case "total_net_output_bytes":
				st.NetOut = n
			case "total_reads_processed":
				st.Reads = n
			default:
				st.UsedMemory = n
			}
		case k == "errorstat_MOVED":
			n, err := strconv.ParseInt(strings.TrimPrefix(v, "count="), 10, 64)
			if err != nil {
				return st, fmt.Errorf("bench: INFO %s=%q: %w", k, v, err)
			}
			st.Moved = n
		case strings.HasPrefix(k, "cmdstat_"):
			name := strings.TrimPrefix(k, "cmdstat_")
			for _, field := range strings.Split(v, ",") {
				fk, fv, _ := strings.Cut(field, "=")
				n, err := strconv.ParseInt(fv, 10, 64)
				if err != nil {
					continue // usec_per_call is a float; not needed
				}
				switch fk {
				case "calls":
					st.Calls[name] = n
				case "usec":
					st.Usec[name] = n
				}
			}
		}
	}
	if sawCPU != 2 {
		return st, errors.New("bench: INFO has no used_cpu_sys/used_cpu_user")
	}
	return st, nil
}

// setupCommands are left out of the per-cycle counts: the benchmark's own
// (INFO between phases) and those of a new connection or of the gateway's
// start (its waiter subscribes to the release channel once).
var setupCommands = map[string]bool{
	"info": true, "ping": true, "hello": true, "client|setinfo": true, "client": true,
	"subscribe": true, "psubscribe": true, "ssubscribe": true,
}

// Sub is b - a: the work done between two readings.
func (b RedisStats) Sub(a RedisStats) RedisStats {
	d := RedisStats{CPU: b.CPU - a.CPU, Calls: map[string]int64{}, Usec: map[string]int64{},
		NetIn: b.NetIn - a.NetIn, NetOut: b.NetOut - a.NetOut, Reads: b.Reads - a.Reads, Moved: b.Moved - a.Moved}
	for k, n := range b.Calls {
		if setupCommands[k] {
			continue
		}
		if n -= a.Calls[k]; n != 0 {
			d.Calls[k] = n
			d.Usec[k] = b.Usec[k] - a.Usec[k]
		}
	}
	return d
}
