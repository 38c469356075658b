package postgres

import (
	"context"
	"embed"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/waitroom/waitroom/internal/order/schema"
)

//go:embed migrations/*.sql
var migrations embed.FS

// migrationLockID keys the advisory lock that serialises migrations. Any
// fixed number works as long as nothing else in the database uses it; this
// one is "waitroom" in ASCII.
const migrationLockID int64 = 0x77616974726f6f6d

// migrate applies the embedded migrations that schema_migrations does not
// list yet, in file name order, in one transaction. Several waitroom
// processes may start at once against a fresh database: the transaction-level
// advisory lock makes the later ones wait and then find everything applied,
// and it is released by the commit or rollback, so a crash cannot leave it
// held.
func migrate(ctx context.Context, pool *pgxpool.Pool) error {
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", migrationLockID); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
			version    text        PRIMARY KEY,
			applied_at timestamptz NOT NULL DEFAULT now()
		)`); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, "SELECT version FROM schema_migrations")
		if err != nil {
			return err
		}
		applied, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		done := make(map[string]bool, len(applied))
		for _, v := range applied {
			done[v] = true
		}
		pending, err := schema.Pending(migrations, done)
		if err != nil {
			return err
		}
		for _, m := range pending {
			// Without arguments pgx uses the simple protocol, so a file
			// may hold several statements.
			if _, err := tx.Exec(ctx, m.SQL); err != nil {
				return fmt.Errorf("%s: %w", m.Name, err)
			}
			if _, err := tx.Exec(ctx, "INSERT INTO schema_migrations (version) VALUES ($1)", m.Name); err != nil {
				return err
			}
		}
		return nil
	})
}
