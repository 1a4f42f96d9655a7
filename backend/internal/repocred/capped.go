package repocred

import (
	"context"
	"fmt"
	"net"
	"net/http"

	gitclient "github.com/go-git/go-git/v5/plumbing/transport/client"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
)

// MaxAnswerBytes bounds what one check reads from a Git server, TLS included (the bound of
// an API server's answers too): a reference advertisement of a hundred thousand refs fits,
// a server that streams without end is cut off at it instead of filling the backend's
// memory until the check's timeout.
const MaxAnswerBytes = 16 << 20

// errAnswerTooLarge ends a read past MaxAnswerBytes.
var errAnswerTooLarge = fmt.Errorf("the Git server's answer exceeds %d MiB", MaxAnswerBytes>>20)

// go-git's HTTPS transport takes its client from a process-wide registry and needs an
// *http.Transport (it clones it to add a CA bundle): the cap sits in its dialer, under TLS.
// Each check dials anew, so that a cap counts one check's bytes.
func init() {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	dial := (&net.Dialer{}).DialContext
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return capConn(conn), nil
	}
	tr.DisableKeepAlives = true
	gitclient.InstallProtocol("https", githttp.NewClient(&http.Client{Transport: tr}))
}

// capConn gives conn a budget of MaxAnswerBytes to read.
func capConn(conn net.Conn) net.Conn { return &cappedConn{Conn: conn, left: MaxAnswerBytes} }

// cappedConn is a connection that fails a read once its budget is spent. A connection has
// one reader at a time.
type cappedConn struct {
	net.Conn
	left int64
}

func (c *cappedConn) Read(p []byte) (int, error) {
	if c.left <= 0 {
		return 0, errAnswerTooLarge
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.Conn.Read(p)
	c.left -= int64(n)
	return n, err
}
