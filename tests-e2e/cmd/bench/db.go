package main

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// Statement is a normalised SQL statement and how often it ran.
type Statement struct {
	Calls int64 `json:"calls"`
	// ExecMs is the time PostgreSQL spent executing the statement's calls (not parsing,
	// planning or the round trips).
	ExecMs float64 `json:"execMs"`
	Query  string  `json:"query"`
}

func resetStatements(ctx context.Context, url string) error {
	return withConn(ctx, url, func(conn *pgx.Conn) error {
		_, err := conn.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements; SELECT pg_stat_statements_reset()")
		return err
	})
}

// countStatements counts statements run on the service's database since the reset,
// leaving out the benchmark's own bookkeeping.
func countStatements(ctx context.Context, url string) (int64, error) {
	var n int64
	err := withConn(ctx, url, func(conn *pgx.Conn) error {
		return conn.QueryRow(ctx, `SELECT coalesce(sum(calls), 0)::bigint FROM pg_stat_statements
			WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
			AND query NOT ILIKE '%pg_stat_statements%'`).Scan(&n)
	})
	return n, err
}

// topStatements lists the most frequent statements since the reset, for profiling.
func topStatements(ctx context.Context, url string, limit int) ([]Statement, error) {
	var out []Statement
	err := withConn(ctx, url, func(conn *pgx.Conn) error {
		rows, err := conn.Query(ctx, `SELECT calls, total_exec_time, left(regexp_replace(query, '\s+', ' ', 'g'), 160) FROM pg_stat_statements
			WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
			AND query NOT ILIKE '%pg_stat_statements%' ORDER BY calls DESC LIMIT $1`, limit)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var st Statement
			if err := rows.Scan(&st.Calls, &st.ExecMs, &st.Query); err != nil {
				return err
			}
			out = append(out, st)
		}
		return rows.Err()
	})
	return out, err
}

func withConn(ctx context.Context, url string, fn func(*pgx.Conn) error) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close(ctx) }()
	return fn(conn)
}
