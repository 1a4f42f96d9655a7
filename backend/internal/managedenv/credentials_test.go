package managedenv

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"testing"
)

func TestCertificateProblem(t *testing.T) {
	cases := []struct {
		name                      string
		err                       error
		problem, unknownAuthority bool
	}{
		{"unknown authority, through a URL error", &url.Error{Op: "Get", URL: "https://x", Err: x509.UnknownAuthorityError{}}, true, true},
		{"unknown authority, inside a verification error", &tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}, true, true},
		{"another name", &tls.CertificateVerificationError{Err: x509.HostnameError{Host: "x"}}, true, false},
		{"expired, wrapped", fmt.Errorf("listing: %w", x509.CertificateInvalidError{Reason: x509.Expired}), true, false},
		{"a message that only mentions certificates", errors.New("certificate of something"), false, false},
		{"refused", &net.OpError{Op: "dial", Err: errors.New("connection refused")}, false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			problem, unknown := certificateProblem(c.err)
			if problem != c.problem || unknown != c.unknownAuthority {
				t.Errorf("certificateProblem = %v, %v; want %v, %v", problem, unknown, c.problem, c.unknownAuthority)
			}
		})
	}
}

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

func TestIsTimeout(t *testing.T) {
	cases := []struct {
		name string
		err  error
		want bool
	}{
		{"a context deadline, wrapped", fmt.Errorf("get: %w", context.DeadlineExceeded), true},
		{"a dial timeout", &url.Error{Op: "Get", URL: "https://x", Err: &net.OpError{Op: "dial", Err: timeoutErr{}}}, true},
		{"refused", &url.Error{Op: "Get", URL: "https://x", Err: &net.OpError{Op: "dial", Err: errors.New("connection refused")}}, false},
		{"a message that only says timeout", errors.New("Client.Timeout exceeded"), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := isTimeout(c.err); got != c.want {
				t.Errorf("isTimeout = %v, want %v", got, c.want)
			}
		})
	}
}
