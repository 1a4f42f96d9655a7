package main

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestMain doubles as the stand-in of the stack that make runs in the test below: it takes
// the terminal, says so, and exits 0 on Ctrl-C, as local-stack does after a clean stop.
func TestMain(m *testing.M) {
	if os.Getenv("LOCAL_STACK_FOREGROUND_CHILD") == "1" {
		interrupted := make(chan os.Signal, 1)
		signal.Notify(interrupted, os.Interrupt)
		restore := takeTerminal()
		fmt.Println("running; press Ctrl-C")
		<-interrupted
		restore()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// Ctrl-C in the terminal of `make run` stops the stack, and make exits 0 with it instead of
// reporting an interrupt (status 130, or killed by SIGINT).
func TestCtrlCOfMakeRunExitsZero(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Fatal("make is needed:", err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	makefile := filepath.Join(t.TempDir(), "Makefile")
	if err := os.WriteFile(makefile, []byte("run:\n\tLOCAL_STACK_FOREGROUND_CHILD=1 "+self+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	master, slave := openPTY(t)
	cmd := exec.Command("make", "-s", "-f", makefile, "run")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	_ = slave.Close()
	waitFor(t, master, "running; press Ctrl-C")
	if _, err := master.Write([]byte{3}); err != nil { // the terminal's Ctrl-C
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("make run ended with %v after Ctrl-C, want exit status 0", err)
		}
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("make run did not end after Ctrl-C")
	}
}

// openPTY opens a pseudo-terminal pair.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = master.Close() })
	if err := unix.IoctlSetPointerInt(int(master.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetUint32(int(master.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	slave, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	return master, slave
}

// waitFor reads the terminal until it shows want.
func waitFor(t *testing.T, master *os.File, want string) {
	t.Helper()
	var seen strings.Builder
	buf := make([]byte, 1024)
	_ = master.SetReadDeadline(time.Now().Add(30 * time.Second))
	for !strings.Contains(seen.String(), want) {
		n, err := master.Read(buf)
		if err != nil {
			t.Fatalf("waiting for %q, the terminal showed %q: %v", want, seen.String(), err)
		}
		seen.Write(buf[:n])
	}
}
