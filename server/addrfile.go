package server

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"go.uber.org/zap"
)

// writeAddrFile writes addr and a newline to path atomically: a reader
// sees no file or the whole line, never a part (a temporary file in the
// same directory, renamed over path).
func writeAddrFile(path, addr string) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("server: --addr-file: %w", err)
	}
	_, err = f.WriteString(addr + "\n")
	err = errors.Join(err, f.Chmod(0o644), f.Close())
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		_ = os.Remove(f.Name())
		return fmt.Errorf("server: --addr-file: %w", err)
	}
	return nil
}

// removeAddrFile removes the address file when the gateway stops.
func removeAddrFile(path string, log *zap.Logger) {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		log.Warn("--addr-file: not removed", zap.String("file", path), zap.Error(err))
	}
}
