package node

import (
	"context"
	"io"
	"log"
	"net"
	"sync"
)

// Forward serves listen (on the host) by connecting each client to addr inside the node's
// namespace, until ctx ends: how kubectl on the host reaches the API server.
func Forward(ctx context.Context, netns, listen, addr string) error {
	l, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	go func() {
		<-ctx.Done()
		_ = l.Close()
	}()
	dial := DialContext(netns)
	for {
		client, err := l.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		go func() {
			defer client.Close()
			server, err := dial(ctx, "tcp", addr)
			if err != nil {
				log.Printf("forward: dialing %s in %s: %v", addr, netns, err)
				return
			}
			defer server.Close()
			var wg sync.WaitGroup
			wg.Add(2)
			pipe := func(dst, src net.Conn) {
				defer wg.Done()
				_, _ = io.Copy(dst, src)
				if tc, ok := dst.(*net.TCPConn); ok {
					_ = tc.CloseWrite()
				}
			}
			go pipe(server, client)
			go pipe(client, server)
			wg.Wait()
		}()
	}
}
