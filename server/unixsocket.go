package server

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/user"
	"strconv"
	"strings"
	"time"

	"github.com/leasegate/leasegate/redisconn"
)

// unixPrefix starts a listen address that names a Unix domain socket:
// --addr unix:/run/leasegate.sock.
const unixPrefix = "unix:"

// unixPath is the socket path of a unix:/path address.
func unixPath(addr string) (path string, ok bool) { return strings.CutPrefix(addr, unixPrefix) }

// isLocal: addr is reached only from this host (a loopback address or a
// Unix socket), where open mode and the embedded store may serve.
func isLocal(addr string) bool {
	_, unix := unixPath(addr)
	return unix || redisconn.IsLoopback(addr)
}

// validateUnix checks the socket settings.
func (c Config) validateUnix() []error {
	path, unix := unixPath(c.Addr)
	var errs []error
	if unix && path == "" {
		errs = append(errs, errors.New("addr unix: needs a socket path (unix:/run/leasegate.sock)"))
	}
	if !unix && (c.AddrMode != "" || c.AddrGroup != "") {
		errs = append(errs, errors.New("addr-mode and addr-group need a Unix socket (--addr unix:/path)"))
	}
	if _, err := socketMode(c.AddrMode); err != nil {
		errs = append(errs, err)
	}
	return errs
}

// socketMode parses --addr-mode: octal permission bits; "" leaves the
// socket as the umask makes it (0).
func socketMode(s string) (fs.FileMode, error) {
	if s == "" {
		return 0, nil
	}
	m, err := strconv.ParseUint(s, 8, 32)
	if err != nil || m == 0 || m > 0o777 {
		return 0, fmt.Errorf("addr-mode %q: want octal permission bits such as 0660", s)
	}
	return fs.FileMode(m), nil
}

// listenUnix listens on the socket at path, removing a socket file left by
// a gateway that is gone (nothing answers on it), then sets its mode and
// group when given. The listener removes the file when it is closed.
func listenUnix(path, mode, group string) (net.Listener, error) {
	if err := removeStaleSocket(path); err != nil {
		return nil, err
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	if err := ownSocket(path, mode, group); err != nil {
		_ = ln.Close()
		return nil, err
	}
	return ln, nil
}

// removeStaleSocket removes path if it is a socket nothing listens on. A
// socket in use, or a file that is not a socket, is an error and stays.
func removeStaleSocket(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if fi.Mode().Type() != fs.ModeSocket {
		return fmt.Errorf("%s exists and is not a socket: left as it is", path)
	}
	if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
		_ = c.Close()
		return fmt.Errorf("%s: another process listens on it", path)
	}
	return os.Remove(path)
}

// ownSocket sets the socket file's mode and group (a name or a number).
func ownSocket(path, mode, group string) error {
	if m, _ := socketMode(mode); m != 0 {
		if err := os.Chmod(path, m); err != nil {
			return err
		}
	}
	if group == "" {
		return nil
	}
	gid, err := strconv.Atoi(group)
	if err != nil {
		g, err := user.LookupGroup(group)
		if err != nil {
			return fmt.Errorf("addr-group: %w", err)
		}
		if gid, err = strconv.Atoi(g.Gid); err != nil {
			return fmt.Errorf("addr-group %q: gid %q", group, g.Gid)
		}
	}
	return os.Chown(path, -1, gid)
}
