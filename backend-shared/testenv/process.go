package testenv

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// Process is a child process started beside the test, with its output in a log file.
type Process struct {
	cmd     *exec.Cmd
	logPath string
	done    chan struct{}
}

// StartProcess starts path with args, writing its output to logPath.
func StartProcess(path string, args []string, logPath string) (*Process, error) {
	return startProcessAs(path, args, logPath, nil, nil)
}

// StartProcessWithEnv is StartProcess with env added to this process's environment.
func StartProcessWithEnv(path string, args []string, logPath string, env []string) (*Process, error) {
	return startProcessAs(path, args, logPath, env, nil)
}

// startProcessAs starts path with args and extra env, logging to logPath, as the given user
// when cred is set.
func startProcessAs(path string, args []string, logPath string, env []string, cred *syscall.Credential) (*Process, error) {
	// Appending keeps the log of an earlier run of a restarted process.
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(path, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	// Own process group, so a Ctrl-C meant for the test runner does not skip our cleanup.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Credential: cred}
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("starting %s: %w", path, err)
	}
	p := &Process{cmd: cmd, logPath: logPath, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		_ = logFile.Close()
		close(p.done)
	}()
	return p, nil
}

// Running reports whether the process has not exited yet.
func (p *Process) Running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// Stop sends SIGTERM, waits up to grace, then kills.
func (p *Process) Stop(grace time.Duration) error {
	if !p.Running() {
		return nil
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
	return nil
}

// ExitCode waits until the process has exited and returns its exit code (-1 if a signal
// ended it).
func (p *Process) ExitCode() int {
	<-p.done
	return p.cmd.ProcessState.ExitCode()
}

// Kill kills the process with SIGKILL, as a crash would, and waits until it is gone.
func (p *Process) Kill() {
	if !p.Running() {
		return
	}
	_ = p.cmd.Process.Kill()
	<-p.done
}

// Signal sends sig and waits up to grace for the process to exit, then kills it.
func (p *Process) Signal(sig syscall.Signal, grace time.Duration) {
	if !p.Running() {
		return
	}
	_ = p.cmd.Process.Signal(sig)
	select {
	case <-p.done:
	case <-time.After(grace):
		p.Kill()
	}
}

// Tail returns the end of the process's log, for error messages.
func (p *Process) Tail() string {
	data, _ := os.ReadFile(p.logPath)
	const max = 2000
	if len(data) > max {
		data = data[len(data)-max:]
	}
	return string(bytes.TrimSpace(data))
}

// Pid is the process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }
