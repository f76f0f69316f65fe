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
)

// redisProcess is the redis-server a run starts for itself.
type redisProcess struct {
	cmd  *exec.Cmd
	dir  string
	addr string
	done chan struct{}
}

// startRedis starts bin on a free loopback port with no persistence, and
// the args added, and waits until it answers PING.
func startRedis(ctx context.Context, bin string, args ...string) (*redisProcess, error) {
	path, err := exec.LookPath(bin)
	if err != nil {
		return nil, fmt.Errorf("bench: %s not found (install it, or pass a loopback -redis-url): %w", bin, err)
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "leasegate-bench-redis-")
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	p := &redisProcess{dir: dir, addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), done: make(chan struct{})}
	p.cmd = exec.Command(path,
		"--port", strconv.Itoa(port),
		"--bind", "127.0.0.1",
		"--dir", dir,
		"--save", "",
		"--appendonly", "no",
		"--daemonize", "no",
		"--logfile", "",
		"--loglevel", "warning",
	)
	p.cmd.Args = append(p.cmd.Args, args...)
	p.cmd.Dir = dir
	if err := p.cmd.Start(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("bench: start %s: %w", path, err)
	}
	go func() { _ = p.cmd.Wait(); close(p.done) }()

	rdb := redis.NewClient(&redis.Options{Addr: p.addr, MaxRetries: -1})
	defer rdb.Close()
	err = pollReady(ctx, p.done, 10*time.Second, func() error {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		return rdb.Ping(pctx).Err()
	})
	switch {
	case err == nil:
		return p, nil
	case errors.Is(err, errExited):
		err = fmt.Errorf("bench: redis-server exited at start (port %d taken?)", port)
	case ctx.Err() == nil:
		err = fmt.Errorf("bench: redis-server on %s did not answer PING: %w", p.addr, err)
	}
	p.stop()
	return nil, err
}

// errExited: the process being waited for exited.
var errExited = errors.New("exited")

// pollReady calls ready every 20 ms until it returns nil. It gives up
// with errExited when done is closed, with ctx's error when ctx ends, and
// with ready's last error once limit has passed.
func pollReady(ctx context.Context, done <-chan struct{}, limit time.Duration, ready func() error) error {
	deadline := time.Now().Add(limit)
	for {
		err := ready()
		if err == nil {
			return nil
		}
		select {
		case <-done:
			return errExited
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready after %v: %w", limit, err)
		}
	}
}

// waitOrKill waits up to d for done (closed when the child p has been
// reaped), then kills p and waits for done.
func waitOrKill(p *os.Process, done <-chan struct{}, d time.Duration) {
	select {
	case <-done:
	case <-time.After(d):
		_ = p.Kill()
		<-done
	}
}

func (p *redisProcess) url() string { return "redis://" + p.addr }

// stop kills the server (it keeps no data) and removes its directory.
func (p *redisProcess) stop() {
	_ = p.cmd.Process.Kill()
	<-p.done
	_ = os.RemoveAll(p.dir)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("bench: free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
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

// redisStats is what INFO says about the server's work so far.
type redisStats struct {
	cpu time.Duration // used_cpu_sys + used_cpu_user
	// calls and usec per command name (lower case, "evalsha", "time", ...).
	calls map[string]int64
	usec  map[string]int64
	// From INFO stats, memory and errorstats when asked for (capacity.go):
	// bytes read from and written to clients, reads from client sockets,
	// used_memory, and the MOVED redirects answered.
	netIn, netOut, reads, usedMemory, moved int64
}

// readRedisStats reads INFO cpu and commandstats, and the sections of
// extra ("stats", "memory", "errorstats") too.
func readRedisStats(ctx context.Context, rdb *redis.Client, extra ...string) (redisStats, error) {
	txt, err := rdb.Info(ctx, append([]string{"cpu", "commandstats"}, extra...)...).Result()
	if err != nil {
		return redisStats{}, fmt.Errorf("bench: INFO: %w", err)
	}
	return parseInfo(txt)
}

// parseInfo reads used_cpu_sys, used_cpu_user and the cmdstat_* lines of
// an INFO reply.
func parseInfo(txt string) (redisStats, error) {
	st := redisStats{calls: map[string]int64{}, usec: map[string]int64{}}
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
			st.cpu += time.Duration(f * float64(time.Second))
			sawCPU++
		case k == "total_net_input_bytes" || k == "total_net_output_bytes" || k == "total_reads_processed" || k == "used_memory":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return st, fmt.Errorf("bench: INFO %s=%q: %w", k, v, err)
			}
			switch k {
			case "total_net_input_bytes":
				st.netIn = n
			case "total_net_output_bytes":
				st.netOut = n
			case "total_reads_processed":
				st.reads = n
			default:
				st.usedMemory = n
			}
		case k == "errorstat_MOVED":
			n, err := strconv.ParseInt(strings.TrimPrefix(v, "count="), 10, 64)
			if err != nil {
				return st, fmt.Errorf("bench: INFO %s=%q: %w", k, v, err)
			}
			st.moved = n
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
					st.calls[name] = n
				case "usec":
					st.usec[name] = n
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

// sub is b - a: the work done between two readings.
func (b redisStats) sub(a redisStats) redisStats {
	d := redisStats{cpu: b.cpu - a.cpu, calls: map[string]int64{}, usec: map[string]int64{},
		netIn: b.netIn - a.netIn, netOut: b.netOut - a.netOut, reads: b.reads - a.reads, moved: b.moved - a.moved}
	for k, n := range b.calls {
		if setupCommands[k] {
			continue
		}
		if n -= a.calls[k]; n != 0 {
			d.calls[k] = n
			d.usec[k] = b.usec[k] - a.usec[k]
		}
	}
	return d
}
