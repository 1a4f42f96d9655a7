package main

import (
	"os"
	"os/signal"

	"golang.org/x/sys/unix"
)

// takeTerminal makes this process the terminal's foreground process group, so that Ctrl-C
// reaches it alone and not the `make` and `go run` that started it: make answers SIGINT
// with exit status 130 whatever its recipe does, while this process stops cleanly and
// exits 0, which they then pass on. The returned function gives the terminal back. Without
// a terminal (CI, a pipe) it does nothing.
func takeTerminal() (restore func()) {
	tty := int(os.Stdin.Fd())
	previous, err := unix.IoctlGetInt(tty, unix.TIOCGPGRP)
	if err != nil {
		return func() {}
	}
	// A background process group that sets the foreground group gets SIGTTOU.
	signal.Ignore(unix.SIGTTOU)
	if err := unix.Setpgid(0, 0); err != nil {
		return func() {}
	}
	if err := unix.IoctlSetPointerInt(tty, unix.TIOCSPGRP, unix.Getpgrp()); err != nil {
		return func() {}
	}
	return func() { _ = unix.IoctlSetPointerInt(tty, unix.TIOCSPGRP, previous) }
}
