package testenv

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

func TestFreePortIsReservedBelowTheEphemeralRange(t *testing.T) {
	seen := map[int]bool{}
	for range 20 {
		port, err := FreePort()
		if err != nil {
			t.Fatal(err)
		}
		if seen[port] {
			t.Fatalf("port %d handed out twice", port)
		}
		seen[port] = true
		if port < lowestTestPort || port >= ephemeralLow() {
			t.Fatalf("port %d outside [%d, %d)", port, lowestTestPort, ephemeralLow())
		}
		// Another test binary cannot take the same port while this one holds it.
		if lock, err := lockPort(filepath.Join(os.TempDir(), "gitops-test-ports"), port); err == nil {
			_ = lock.Close()
			t.Fatalf("port %d is not locked", port)
		}
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			t.Fatalf("reserved port %d is not bindable: %v", port, err)
		}
		_ = l.Close()
	}
}
