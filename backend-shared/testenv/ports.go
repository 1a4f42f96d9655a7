package testenv

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// Ports handed to child processes are chosen below the kernel's ephemeral range, so no
// bind to port 0 and no outgoing connection on the machine can take one between the
// choice and the child's bind, and each is locked in a file that every test binary on the
// machine shares, so two packages running in parallel never choose the same port. The
// lock is held until the test process exits (the kernel drops it even on a crash).
const (
	lowestTestPort = 10000
	portAttempts   = 200
)

var (
	reservedMu sync.Mutex
	// reserved keeps the lock files open; closing one would release its port.
	reserved = map[int]*os.File{}
)

// FreePort returns a TCP port that is free on every address and reserved for this test
// process.
func FreePort() (int, error) {
	low, high := lowestTestPort, ephemeralLow()
	if high-low < 1000 {
		return kernelPort()
	}
	dir := filepath.Join(os.TempDir(), "gitops-test-ports")
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return 0, err
	}
	reservedMu.Lock()
	defer reservedMu.Unlock()
	for range portAttempts {
		port := low + rand.IntN(high-low)
		if _, mine := reserved[port]; mine {
			continue
		}
		lock, err := lockPort(dir, port)
		if err != nil {
			continue
		}
		if !bindable(port) {
			_ = lock.Close()
			continue
		}
		reserved[port] = lock
		return port, nil
	}
	return 0, fmt.Errorf("no free test port in [%d, %d) after %d attempts", low, high, portAttempts)
}

// lockPort takes the machine-wide lock on port without waiting.
func lockPort(dir string, port int) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(port)), os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		return nil, err
	}
	return f, nil
}

// bindable reports whether nothing listens on port, on any address.
func bindable(port int) bool {
	l, err := net.Listen("tcp", ":"+strconv.Itoa(port))
	if err != nil {
		return false
	}
	_ = l.Close()
	return true
}

// ephemeralLow is the first port of the kernel's ephemeral range (32768 by default).
func ephemeralLow() int {
	data, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	fields := strings.Fields(string(data))
	if len(fields) == 0 {
		return 32768
	}
	low, err := strconv.Atoi(fields[0])
	if err != nil {
		return 32768
	}
	return low
}

// kernelPort lets the kernel choose, for machines whose ephemeral range leaves no room
// below it; another process may take the port before the caller binds it.
func kernelPort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, errors.Join(errors.New("choosing a port"), err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port, nil
}
