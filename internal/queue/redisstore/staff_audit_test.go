package redisstore_test

import (
	"testing"

	"github.com/waitroom/waitroom/internal/queue/redisstore"
	"github.com/waitroom/waitroom/internal/staff"
	"github.com/waitroom/waitroom/internal/staff/stafftest"
)

// TestAudit runs the audit log's suite on Redis.
func TestAudit(t *testing.T) {
	stafftest.RunAudit(t, func(t *testing.T) staff.AuditStore {
		rdb, prefix := mustOpenRedis(t)
		return redisstore.New(rdb, prefix)
	})
}
