package repocred

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"io"
	"net"
	"testing"
	"time"

	stdssh "golang.org/x/crypto/ssh"
)

// An SSH server that accepts and then never answers holds the check until its timeout, and
// no longer: the connection is closed when the check gives up, not left to TCP.
func TestSSHCheckClosesAStalledConnection(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		if c, err := ln.Accept(); err == nil {
			accepted <- c
		}
	}()
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := stdssh.MarshalPrivateKey(key, "")
	if err != nil {
		t.Fatal(err)
	}

	const timeout = time.Second
	start := time.Now()
	err = Verify(context.Background(), "ssh://git@"+ln.Addr().String()+"/repo.git",
		&Credentials{SSHPrivateKey: pem.EncodeToMemory(block)}, nil, timeout)
	if err == nil {
		t.Fatal("the check of a stalled server succeeded")
	}
	if took := time.Since(start); took > timeout+time.Second {
		t.Fatalf("the check took %s, beyond its %s timeout", took, timeout)
	}
	conn := <-accepted
	defer conn.Close()
	// The client wrote its version line and waits for the server's: it must hang up.
	_ = conn.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := io.Copy(io.Discard, conn); err != nil {
		t.Fatalf("the connection is still open %s after the check gave up: %v", 2*time.Second, err)
	}
}
