package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"fmt"

	"github.com/waitroom/waitroom/internal/order/schema"
)

//go:embed migrations/*.sql
var migrations embed.FS

// migrate applies the embedded migrations that schema_migrations does not
// list yet, in file name order, in one transaction. db is the write pool,
// whose transactions begin IMMEDIATE: the database's write lock is taken
// before anything is read, so a second process starting at the same time
// waits (busy_timeout) and then finds everything applied.
func migrate(ctx context.Context, db *sql.DB) (err error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    TEXT PRIMARY KEY,
		applied_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
	) STRICT`); err != nil {
		return err
	}
	done, err := appliedVersions(ctx, tx)
	if err != nil {
		return err
	}
	pending, err := schema.Pending(migrations, done)
	if err != nil {
		return err
	}
	for _, m := range pending {
		// The driver runs every statement of a multi-statement string.
		if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
			return fmt.Errorf("%s: %w", m.Name, err)
		}
		if _, err := tx.ExecContext(ctx, "INSERT INTO schema_migrations (version) VALUES (?)", m.Name); err != nil {
			return err
		}
	}
	return tx.Commit()
}

func appliedVersions(ctx context.Context, tx *sql.Tx) (map[string]bool, error) {
	rows, err := tx.QueryContext(ctx, "SELECT version FROM schema_migrations")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	done := make(map[string]bool)
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		done[v] = true
	}
	return done, rows.Err()
}
