// Package notify carries PostgreSQL LISTEN/NOTIFY signals between the components: the
// cluster-agent announces "application state changed" and "operation changed", and every
// backend replica listens, so status follows Argo CD without polling. Payloads are ids,
// except operation_changed's (db.OperationChange), which says what a receiver needs to
// route the change; receivers read the rows they show.
package notify

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/jackc/pgx/v5"
	"github.com/uptrace/bun"

	"github.com/gitops-service/gitops-service/backend-shared/db"
)

// Channels.
const (
	// ApplicationStateChanged carries an application id whose application_states row changed.
	ApplicationStateChanged = "application_state_changed"
	// OperationChanged carries the db.OperationChange of an operation whose state changed.
	OperationChanged = "operation_changed"
	// EngineInstancesChanged has an empty payload: a trigger on engine_instances sends it
	// whenever a statement changes the table.
	EngineInstancesChanged = "engine_instances_changed"
)

// Publish sends a notification through idb. Inside a transaction PostgreSQL delivers it
// only when (and if) the transaction commits, so listeners never see uncommitted rows.
func Publish(ctx context.Context, idb bun.IDB, channel, payload string) error {
	if _, err := idb.NewRaw("SELECT pg_notify(?, ?)", channel, payload).Exec(ctx); err != nil {
		return fmt.Errorf("publishing on %s: %w", channel, err)
	}
	return nil
}

// Listener holds a dedicated connection (LISTEN does not work through a pool) and calls
// Handler for every notification on Channels. When the connection is lost it reconnects
// with capped exponential backoff, listens again and calls OnReconnect, since whatever was
// notified meanwhile is lost and the consumer must resync.
//
// It is a controller-runtime Runnable that runs on every replica (no leader election):
// add it with mgr.Add. Handler and OnReconnect run on the listener's goroutine, one at a
// time, and should only enqueue work (e.g. onto a controller's workqueue through a
// queue.Handle source).
type Listener struct {
	// Config is the database to listen on; the TLS policy of db.Open applies.
	Config db.Config
	// Channels to LISTEN on.
	Channels []string
	// Handler is called with each notification.
	Handler func(ctx context.Context, channel, payload string)
	// OnReconnect, if set, is called after every reconnection (not after the first
	// connection).
	OnReconnect func(ctx context.Context)
	// MinBackoff and MaxBackoff bound the wait between connection attempts (defaults 100ms
	// and 30s).
	MinBackoff, MaxBackoff time.Duration
	// Log is used when set; otherwise the logger of Start's context.
	Log *logr.Logger

	listening atomic.Bool
}

// Listening says whether the listener has a connection listening.
func (l *Listener) Listening() bool { return l.listening.Load() }

// NeedLeaderElection is false: every replica needs the notifications.
func (l *Listener) NeedLeaderElection() bool { return false }

// Start listens until ctx is cancelled, then returns nil. It returns an error only for a
// configuration that can never work (e.g. an invalid URL).
func (l *Listener) Start(ctx context.Context) error {
	log := logr.FromContextOrDiscard(ctx)
	if l.Log != nil {
		log = *l.Log
	}
	log = log.WithName("notify-listener")
	if len(l.Channels) == 0 || l.Handler == nil {
		return errors.New("notify listener: Channels and Handler are required")
	}
	cc, err := l.Config.ConnConfig()
	if err != nil {
		return err
	}
	// Detect a dead server or network within ~30s instead of waiting forever in
	// WaitForNotification: TCP keepalives need no goroutine and no polling query.
	dialer := &net.Dialer{
		Timeout:         15 * time.Second,
		KeepAliveConfig: net.KeepAliveConfig{Enable: true, Idle: 15 * time.Second, Interval: 5 * time.Second, Count: 3},
	}
	cc.DialFunc = dialer.DialContext

	minB, maxB := l.MinBackoff, l.MaxBackoff
	if minB <= 0 {
		minB = 100 * time.Millisecond
	}
	if maxB < minB {
		maxB = max(30*time.Second, minB)
	}
	backoff := minB
	connectedBefore := false
	for {
		conn, err := l.connect(ctx, cc)
		if err == nil {
			if connectedBefore {
				log.Info("Reconnected to the database; resyncing")
				if l.OnReconnect != nil {
					l.OnReconnect(ctx)
				}
			}
			connectedBefore = true
			backoff = minB
			l.listening.Store(true)
			err = l.receive(ctx, conn)
			l.listening.Store(false)
			closeCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_ = conn.Close(closeCtx)
			cancel()
		}
		if ctx.Err() != nil {
			return nil
		}
		log.Error(err, "Database notification connection failed; reconnecting", "backoff", backoff)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, maxB)
	}
}

func (l *Listener) connect(ctx context.Context, cc *pgx.ConnConfig) (*pgx.Conn, error) {
	conn, err := pgx.ConnectConfig(ctx, cc)
	if err != nil {
		return nil, err
	}
	for _, ch := range l.Channels {
		if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{ch}.Sanitize()); err != nil {
			_ = conn.Close(context.Background())
			return nil, err
		}
	}
	return conn, nil
}

// receive delivers notifications until the connection fails or ctx ends.
func (l *Listener) receive(ctx context.Context, conn *pgx.Conn) error {
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		l.Handler(ctx, n.Channel, n.Payload)
	}
}
