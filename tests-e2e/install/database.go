package install

import (
	"context"
	"crypto/rand"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gitops-service/gitops-service/backend-shared/testenv"
	"github.com/gitops-service/gitops-service/tests-e2e/node"
)

// Database is PostgreSQL as an operator runs it outside the cluster: a server of the
// node's machine (in its network namespace), reached by the pods on the node's address
// over TLS with a certificate of the database's own CA.
type Database struct {
	// URL is the DSN the service gets, with sslmode=verify-full against CAFile.
	URL    string
	CAFile string
	// Stop and Start stop the server and start it again on the same data (an outage).
	Stop, Start func() error
}

const databasePort = "5432"

// StartDatabase initialises a server in dir and starts it on the node; nodeIP is the
// address the pods reach it at.
func StartDatabase(ctx context.Context, c *node.Cluster, dir, nodeIP string) (*Database, error) {
	bin, err := testenv.PostgresBinDir()
	if err != nil {
		return nil, err
	}
	cred, err := testenv.PostgresCredential()
	if err != nil {
		return nil, err
	}
	if cred == nil {
		return nil, fmt.Errorf("the node runs as root, and PostgreSQL beside it as the postgres user")
	}
	uid, gid := int(cred.Uid), int(cred.Gid)
	data := filepath.Join(dir, "data")
	if err := os.MkdirAll(data, 0o700); err != nil {
		return nil, err
	}
	if err := os.Chown(data, uid, gid); err != nil {
		return nil, err
	}
	// The directories above must let the postgres user through to its data.
	for d := dir; d != "/" && d != "."; d = filepath.Dir(d) {
		if info, err := os.Stat(d); err == nil && info.Mode().Perm()&0o001 == 0 {
			_ = os.Chmod(d, info.Mode().Perm()|0o011)
		}
	}
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres", "--auth=trust", "--no-sync", "--encoding=UTF8", "--locale=C")
	initdb.SysProcAttr = credential(uid, gid)
	if out, err := initdb.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("initdb: %w: %s", err, out)
	}
	caPEM, certPEM, keyPEM, err := testenv.ServerCertificate(nodeIP)
	if err != nil {
		return nil, err
	}
	db := &Database{CAFile: filepath.Join(dir, "ca.crt")}
	files := map[string][]byte{
		db.CAFile:                          caPEM,
		filepath.Join(data, "server.crt"):  certPEM,
		filepath.Join(data, "server.key"):  keyPEM,
		filepath.Join(data, "pg_hba.conf"): []byte("host all postgres 127.0.0.1/32 trust\nhostssl all all 0.0.0.0/0 scram-sha-256\n"),
	}
	for path, body := range files {
		if err := os.WriteFile(path, body, 0o600); err != nil {
			return nil, err
		}
		if err := os.Chown(path, uid, gid); err != nil {
			return nil, err
		}
	}
	if err := os.Chmod(db.CAFile, 0o644); err != nil {
		return nil, err
	}
	db.Start = func() error {
		return c.StartAs("postgres", uid, gid, filepath.Join(bin, "postgres"), "-D", data, "-p", databasePort,
			"-c", "listen_addresses=127.0.0.1,"+nodeIP, "-c", "unix_socket_directories=", "-c", "ssl=on",
			"-c", "fsync=off", "-c", "max_connections=200")
	}
	db.Stop = func() error { return c.Stop("postgres") }
	if err := db.Start(); err != nil {
		return nil, err
	}
	password := rand.Text()
	admin, err := Connect(ctx, c, "postgres")
	if err != nil {
		return nil, err
	}
	defer admin.Close(context.Background())
	for _, sql := range []string{
		fmt.Sprintf("CREATE ROLE gitops LOGIN PASSWORD '%s'", password),
		"CREATE DATABASE gitops OWNER gitops",
	} {
		if _, err := admin.Exec(ctx, sql); err != nil {
			return nil, fmt.Errorf("setting up the database: %w", err)
		}
	}
	db.URL = (&url.URL{
		Scheme: "postgres", User: url.UserPassword("gitops", password),
		Host: net.JoinHostPort(nodeIP, databasePort), Path: "/gitops",
		RawQuery: "sslmode=verify-full&sslrootcert=/etc/gitops-service/database-ca/ca.crt",
	}).String()
	return db, nil
}

// Connect reaches database on the server as its superuser from inside the node's namespace.
func Connect(ctx context.Context, c *node.Cluster, database string) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig("postgres://postgres@127.0.0.1:" + databasePort + "/" + database + "?sslmode=disable")
	if err != nil {
		return nil, err
	}
	cfg.DialFunc = node.DialContext(c.Name)
	deadline := time.Now().Add(30 * time.Second)
	for {
		conn, err := pgx.ConnectConfig(ctx, cfg)
		if err == nil {
			return conn, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("connecting to PostgreSQL on the node: %w (log: %s)", err, c.LogPath("postgres"))
		}
		time.Sleep(200 * time.Millisecond)
	}
}
