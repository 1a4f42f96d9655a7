package manageropts

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
)

// TestPprofAddress starts a real manager with the shared flags (metrics and probes off,
// so that pprof is the only server it may bind) and checks that --pprof-address serves
// net/http/pprof when set and that no socket is listening otherwise. The manager never
// needs the API server: it has no controllers, hence no informers.
func TestPprofAddress(t *testing.T) {
	for _, tc := range []struct {
		name  string
		flags []string
		serve bool
	}{
		{name: "default: off"},
		{name: "empty: off", flags: []string{"--pprof-address="}},
		{name: "0: off", flags: []string{"--pprof-address=0"}},
		{name: "set: serves", flags: []string{"--pprof-address=127.0.0.1:" + freePort(t)}, serve: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := New("test", "0", "0")
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			opts.BindFlags(fs)
			if err := fs.Parse(tc.flags); err != nil {
				t.Fatal(err)
			}
			before := listeningSockets(t)
			mgr, err := ctrl.NewManager(&rest.Config{Host: "https://127.0.0.1:1"}, opts.ManagerOptions(runtime.NewScheme()))
			if err != nil {
				t.Fatalf("creating the manager: %v", err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- mgr.Start(ctx) }()
			defer func() {
				cancel()
				if err := <-done; err != nil {
					t.Errorf("manager: %v", err)
				}
			}()

			if !tc.serve {
				// The pprof listener is bound when the manager is created; give a
				// server started late a moment anyway.
				time.Sleep(200 * time.Millisecond)
				if after := listeningSockets(t); after != before {
					t.Fatalf("%d listening sockets with %v, %d before the manager", after, tc.flags, before)
				}
				return
			}
			if after := listeningSockets(t); after != before+1 {
				t.Fatalf("%d listening sockets with %v, %d before the manager: want one more", after, tc.flags, before)
			}
			url := "http://" + opts.PprofAddr + "/debug/pprof/"
			var body string
			deadline := time.Now().Add(10 * time.Second)
			for {
				resp, err := http.Get(url)
				if err == nil {
					b, _ := io.ReadAll(resp.Body)
					_ = resp.Body.Close()
					if resp.StatusCode == http.StatusOK {
						body = string(b)
						break
					}
					err = fmt.Errorf("status %s", resp.Status)
				}
				if time.Now().After(deadline) {
					t.Fatalf("GET %s: %v", url, err)
				}
				time.Sleep(50 * time.Millisecond)
			}
			if !strings.Contains(body, "goroutine") || !strings.Contains(body, "heap") {
				t.Fatalf("GET %s is not the pprof index:\n%s", url, body)
			}
		})
	}
}

// freePort returns a port nothing listens on at the moment.
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	_, port, _ := net.SplitHostPort(l.Addr().String())
	return port
}

// listeningSockets counts this process's TCP sockets in the LISTEN state: its socket
// descriptors (/proc/self/fd) matched with the listening entries of /proc/net/tcp{,6}.
func listeningSockets(t *testing.T) int {
	t.Helper()
	listening := map[string]bool{}
	for _, f := range []string{"/proc/self/net/tcp", "/proc/self/net/tcp6"} {
		b, err := os.ReadFile(f)
		if err != nil {
			if os.IsNotExist(err) {
				continue
			}
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			// sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
			fields := strings.Fields(line)
			if len(fields) > 9 && fields[3] == "0A" {
				listening[fields[9]] = true
			}
		}
	}
	fds, err := filepath.Glob("/proc/self/fd/*")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, fd := range fds {
		target, err := os.Readlink(fd)
		if err != nil {
			continue
		}
		if inode, ok := strings.CutPrefix(target, "socket:["); ok && listening[strings.TrimSuffix(inode, "]")] {
			n++
		}
	}
	return n
}
