package launch

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisSpec says how to start a redis-server.
type RedisSpec struct {
	Bin  string // the binary's path
	Port int    // 0: StartRedis picks a free one
	Dir  string // its working directory (AOF, RDB, nodes.conf)
	// TLS: Port is the TLS port and the plain port is off.
	TLS bool
	// Lead goes before the generated arguments (a config file and
	// --sentinel for a Sentinel), Args after them.
	Lead, Args []string
	// ReadyLine is the log line that says the server is up (default
	// "Ready to accept connections"; a Sentinel never prints that).
	ReadyLine string
}

// Redis is a running redis-server: no persistence unless its Args ask
// for it, bound to 127.0.0.1.
type Redis struct {
	Spec RedisSpec

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{} // closed when cmd has been reaped
}

// StartRedis starts spec and waits until its log says it is ready. With
// spec.Port 0 it picks a free port (FreePort), and when another process
// took that port first it tries another, up to three in all.
func StartRedis(spec RedisSpec) (*Redis, error) {
	r := &Redis{Spec: spec}
	if spec.Port != 0 {
		return r, r.Start()
	}
	for try := 1; ; try++ {
		port, err := FreePort()
		if err != nil {
			return nil, err
		}
		r.Spec.Port = port
		err = r.Start()
		if err == nil || try == 3 || !errors.Is(err, ErrPortTaken) {
			return r, err
		}
	}
}

// Start starts the server on its port and directory (again, after Stop
// or Kill) and waits until it is ready.
func (r *Redis) Start() error {
	s := r.Spec
	args := append([]string(nil), s.Lead...)
	if s.TLS {
		args = append(args, "--port", "0", "--tls-port", strconv.Itoa(s.Port))
	} else {
		args = append(args, "--port", strconv.Itoa(s.Port))
	}
	args = append(args,
		"--bind", "127.0.0.1",
		"--dir", s.Dir,
		"--save", "",
		"--appendonly", "no",
		"--daemonize", "no",
		"--logfile", "",
	)
	args = append(args, s.Args...)
	cmd := exec.Command(s.Bin, args...)
	cmd.Dir = s.Dir
	out, err := cmd.StdoutPipe()
	if err != nil {
		return fmt.Errorf("launch: redis-server pipe: %w", err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("launch: start redis-server: %w", err)
	}
	ready := make(chan struct{})
	readyText := s.ReadyLine
	if readyText == "" {
		readyText = "Ready to accept connections"
	}
	var logMu sync.Mutex
	var log strings.Builder
	go func() {
		sc := bufio.NewScanner(out)
		signalled := false
		for sc.Scan() {
			line := sc.Text()
			logMu.Lock()
			log.WriteString(line + "\n")
			logMu.Unlock()
			if !signalled && strings.Contains(line, readyText) {
				signalled = true
				close(ready)
			}
		}
		_, _ = io.Copy(io.Discard, out)
	}()
	exited := make(chan error, 1)
	reaped := make(chan struct{})
	go func() {
		err := cmd.Wait()
		close(reaped)
		exited <- err
	}()
	select {
	case <-ready:
	case err := <-exited:
		logMu.Lock()
		defer logMu.Unlock()
		if strings.Contains(log.String(), "Address already in use") {
			return fmt.Errorf("%w: redis-server on %d", ErrPortTaken, s.Port)
		}
		return fmt.Errorf("launch: redis-server exited before it was ready (%v):\n%s", err, log.String())
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		<-reaped
		return fmt.Errorf("launch: redis-server on %d not ready after 20s", s.Port)
	}
	r.mu.Lock()
	r.cmd, r.exited = cmd, reaped
	r.mu.Unlock()
	return nil
}

// Addr is host:port of the server.
func (r *Redis) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(r.Spec.Port)) }

// Stop shuts the server down with SIGINT (with AOF on, everything
// fsynced stays), SIGKILL after 10 s. It is safe to call twice.
func (r *Redis) Stop() {
	cmd, done := r.take()
	if cmd == nil {
		return
	}
	resume(cmd.Process) // in case it was paused
	_ = cmd.Process.Signal(os.Interrupt)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}

// Kill ends the server at once with SIGKILL, as a crash would.
func (r *Redis) Kill() {
	cmd, done := r.take()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Kill()
	<-done
}

func (r *Redis) take() (*exec.Cmd, chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	cmd, done := r.cmd, r.exited
	r.cmd, r.exited = nil, nil
	return cmd, done
}

// Running: started and not stopped or killed since.
func (r *Redis) Running() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cmd != nil
}

// Signal sends sig to the running server.
func (r *Redis) Signal(sig os.Signal) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd == nil {
		return fmt.Errorf("launch: redis-server on %d: not running", r.Spec.Port)
	}
	return r.cmd.Process.Signal(sig)
}

// ClusterArgs are the redis-server arguments of a cluster node whose
// bus is on port bus.
func ClusterArgs(bus int) []string {
	return []string{"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-port", strconv.Itoa(bus)}
}

// ClusterNode is a node FormCluster joins: its address and bus port.
type ClusterNode struct {
	Addr string
	Bus  int
}

// FormCluster gives each node (started with ClusterArgs) an equal range
// of the 16384 slots and joins them (CLUSTER ADDSLOTSRANGE, CLUSTER
// MEET), then waits until every node says cluster_state:ok and knows
// them all. Unlike `redis-cli --cluster create` it makes clusters of one
// and two masters too.
func FormCluster(ctx context.Context, nodes []ClusterNode) error {
	n := len(nodes)
	var rcs []*redis.Client
	defer func() {
		for _, rc := range rcs {
			_ = rc.Close()
		}
	}()
	for i, nd := range nodes {
		rc := redis.NewClient(&redis.Options{Addr: nd.Addr})
		rcs = append(rcs, rc)
		lo, hi := i*16384/n, (i+1)*16384/n-1
		if err := rc.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", lo, hi).Err(); err != nil {
			return fmt.Errorf("launch: CLUSTER ADDSLOTSRANGE on %s: %w", nd.Addr, err)
		}
		if i > 0 {
			host, port, _ := net.SplitHostPort(nd.Addr)
			if err := rcs[0].Do(ctx, "CLUSTER", "MEET", host, port, nd.Bus).Err(); err != nil {
				return fmt.Errorf("launch: CLUSTER MEET %s: %w", nd.Addr, err)
			}
		}
	}
	err := Poll(ctx, nil, 30*time.Second, 10*time.Millisecond, func() error {
		for i, rc := range rcs {
			info, err := rc.ClusterInfo(ctx).Result()
			if err != nil {
				return err
			}
			if !strings.Contains(info, "cluster_state:ok") || !strings.Contains(info, "cluster_known_nodes:"+strconv.Itoa(n)+"\r") {
				return fmt.Errorf("%s says:\n%s", nodes[i].Addr, info)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("launch: cluster not ok: %w", err)
	}
	return nil
}
