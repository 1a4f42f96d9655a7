package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// PostgresOptions configures a PostgreSQL server started by StartPostgres.
type PostgresOptions struct {
	// DataDir keeps the cluster in this directory across runs (created by initdb when
	// empty). Empty means a temporary directory removed by Stop.
	DataDir string
	// Port to listen on (127.0.0.1 only); 0 picks a free one.
	Port int
}

// Postgres is a PostgreSQL server on loopback, owned by the test process.
type Postgres struct {
	Port    int
	dataDir string
	temp    bool
	proc    *Process
	// bin, args and cred start the server again (Restart).
	bin  string
	args []string
	cred *syscall.Credential
}

// StartPostgres initialises (if needed) and starts a PostgreSQL server. When the process
// runs as root, the server runs as the `postgres` user, since PostgreSQL refuses root.
func StartPostgres(opts PostgresOptions) (*Postgres, error) {
	bin, err := PostgresBinDir()
	if err != nil {
		return nil, err
	}
	cred, err := PostgresCredential()
	if err != nil {
		return nil, err
	}
	p := &Postgres{Port: opts.Port, dataDir: opts.DataDir}
	if p.dataDir == "" {
		if p.dataDir, err = os.MkdirTemp("", "gitops-pg-"); err != nil {
			return nil, err
		}
		p.temp = true
	}
	if err := os.MkdirAll(p.dataDir, 0o700); err != nil {
		return nil, err
	}
	if cred != nil {
		if err := os.Chown(p.dataDir, int(cred.Uid), int(cred.Gid)); err != nil {
			return nil, err
		}
	}
	if _, err := os.Stat(filepath.Join(p.dataDir, "PG_VERSION")); err != nil {
		cmd := exec.Command(filepath.Join(bin, "initdb"), "-D", p.dataDir, "-U", "postgres",
			"--auth=trust", "--no-sync", "--encoding=UTF8", "--locale=C")
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, p.cleanupAfter(fmt.Errorf("initdb: %w: %s", err, out))
		}
	}
	if p.Port == 0 {
		if p.Port, err = FreePort(); err != nil {
			return nil, p.cleanupAfter(err)
		}
	}
	args := []string{
		"-D", p.dataDir,
		"-p", strconv.Itoa(p.Port),
		"-c", "listen_addresses=127.0.0.1",
		"-c", "unix_socket_directories=",
		"-c", "max_connections=300",
		"-c", "shared_preload_libraries=pg_stat_statements",
		// A disposable server: durability buys nothing and costs seconds.
		"-c", "fsync=off",
		"-c", "synchronous_commit=off",
		"-c", "full_page_writes=off",
	}
	p.bin, p.args, p.cred = filepath.Join(bin, "postgres"), args, cred
	if err := p.start(); err != nil {
		return nil, errors.Join(err, p.Stop())
	}
	return p, nil
}

func (p *Postgres) start() error {
	var err error
	if p.proc, err = startProcessAs(p.bin, p.args, p.LogPath(), nil, p.cred); err != nil {
		return err
	}
	return p.waitReady(30 * time.Second)
}

// Crash stops the server with an immediate shutdown (SIGQUIT: no checkpoint, crash
// recovery at the next start), as a crash of the database would.
func (p *Postgres) Crash() {
	p.proc.Signal(syscall.SIGQUIT, 20*time.Second)
}

// Restart starts a server stopped by Crash again, on the same port and data.
func (p *Postgres) Restart() error {
	if p.proc.Running() {
		return errors.New("postgres is still running")
	}
	return p.start()
}

// URL is a connection URL for database name on this server (TLS off: loopback only).
func (p *Postgres) URL(database string) string {
	u := url.URL{
		Scheme:   "postgres",
		User:     url.User("postgres"),
		Host:     net.JoinHostPort("127.0.0.1", strconv.Itoa(p.Port)),
		Path:     "/" + database,
		RawQuery: "sslmode=disable",
	}
	return u.String()
}

// CreateDatabase creates database name, as a copy of template when template is not empty.
func (p *Postgres) CreateDatabase(ctx context.Context, name, template string) error {
	conn, err := pgx.Connect(ctx, p.URL("postgres"))
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close(ctx) }()
	sql := "CREATE DATABASE " + pgx.Identifier{name}.Sanitize()
	if template != "" {
		sql += " TEMPLATE " + pgx.Identifier{template}.Sanitize()
	}
	_, err = conn.Exec(ctx, sql)
	return err
}

// DropDatabase drops database name, disconnecting its sessions.
func (p *Postgres) DropDatabase(ctx context.Context, name string) error {
	conn, err := pgx.Connect(ctx, p.URL("postgres"))
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close(ctx) }()
	_, err = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
	return err
}

// NewDatabase creates a uniquely named database for one test (a copy of template when not
// empty), drops it when the test ends, and returns its connection URL.
func (p *Postgres) NewDatabase(t testing.TB, template string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	name := "test_" + randomSuffix()
	if err := p.CreateDatabase(ctx, name, template); err != nil {
		t.Fatalf("creating database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := p.DropDatabase(ctx, name); err != nil {
			t.Errorf("dropping database %s: %v", name, err)
		}
	})
	return p.URL(name)
}

// Stop shuts the server down (fast shutdown) and removes a temporary data directory.
func (p *Postgres) Stop() error {
	if p.proc != nil && p.proc.Running() {
		_ = p.proc.cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-p.proc.done:
		case <-time.After(20 * time.Second):
			_ = p.proc.cmd.Process.Kill()
			<-p.proc.done
		}
	}
	return p.cleanupAfter(nil)
}

// LogPath is the server's log file.
func (p *Postgres) LogPath() string { return p.dataDir + ".log" }

func (p *Postgres) cleanupAfter(err error) error {
	if p.temp {
		err = errors.Join(err, os.RemoveAll(p.dataDir), os.RemoveAll(p.dataDir+".log"))
	}
	return err
}

func (p *Postgres) waitReady(timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for {
		if !p.proc.Running() {
			return fmt.Errorf("postgres exited: %s", p.proc.Tail())
		}
		conn, err := pgx.Connect(ctx, p.URL("postgres"))
		if err == nil {
			return conn.Close(ctx)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("postgres not ready after %s: %w: %s", timeout, err, p.proc.Tail())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Dump runs pg_dump (the one beside the server's binaries: pg_dump refuses servers newer
// than itself) against a database of this server with extra arguments (e.g.
// --schema-only) and returns its output.
func (p *Postgres) Dump(ctx context.Context, database string, args ...string) (string, error) {
	bin, err := PostgresBinDir()
	if err != nil {
		return "", err
	}
	full := append([]string{"--host=127.0.0.1", "--port=" + strconv.Itoa(p.Port), "--username=postgres",
		"--no-password", "--dbname=" + database}, args...)
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "pg_dump"), full...)
	cmd.Env = append(os.Environ(), "PGSSLMODE=disable")
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return "", fmt.Errorf("pg_dump: %w: %s", err, ee.Stderr)
		}
		return "", fmt.Errorf("pg_dump: %w", err)
	}
	return string(out), nil
}

// PostgresBinDir finds initdb and postgres: $GITOPS_POSTGRES_BIN, then Debian's newest
// /usr/lib/postgresql/<version>/bin, then PATH.
func PostgresBinDir() (string, error) {
	if dir := os.Getenv("GITOPS_POSTGRES_BIN"); dir != "" {
		return dir, nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return versionOf(dirs[i]) > versionOf(dirs[j]) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	if path, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(path), nil
	}
	return "", errors.New("PostgreSQL server binaries not found: install them with `hack/install-deps.sh` (Debian package postgresql)")
}

func versionOf(binDir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return v
}

// PostgresCredential is the `postgres` user when running as root, else nil (run as self).
func PostgresCredential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("running as root, PostgreSQL needs the `postgres` user (created by the Debian package): %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

func randomSuffix() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
