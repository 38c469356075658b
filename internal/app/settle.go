package app

// The start's first step: the config made final (resolveConfig).

import (
	"fmt"
	"os"
	"time"
)

// resolveConfig makes the config final before anything reads it: the
// logger and output, the queues' defaults and the queues file, and the
// secrets not given (the
// embedded default keeps its auth secret in the data dir, so JWTs and
// sessions survive a restart and `waitroom token` finds it, and its admin
// token, so a restart does not lock the operator out).
func (m *Main) resolveConfig() (err error) {
	c := &m.Config
	if m.Logger == nil {
		m.Logger = NewLogger(*c, os.Stderr)
	}
	if m.Clock == nil {
		m.Clock = time.Now
	}
	if m.Stdout == nil {
		m.Stdout = os.Stdout
	}
	if m.settings.newQueues, err = c.QueueConfig(); err != nil {
		return err
	}
	if c.QueuesFile != "" {
		f, err := m.readQueuesFile()
		if err != nil {
			return err
		}
		m.settings.queuesFile.Store(f)
	}
	if err := m.readWebhookSecret(m.settings.queuesFile.Load()); err != nil {
		return err
	}
	switch {
	case c.AuthSecret != "":
	case c.Embedded():
		m.settings.devSecret = true
		if c.AuthSecret, err = DevSecret(c.DataDir); err != nil {
			return fmt.Errorf("--data-dir: the dev auth secret: %w", err)
		}
	default:
		c.AuthSecret = randomHex(32)
		m.Logger.Warn("no --auth-secret: using a random one; session cookies and JWTs will not work across instances or restarts")
	}
	if c.AdminToken == "" && c.Embedded() {
		if c.AdminToken, err = AdminToken(c.DataDir); err != nil {
			return fmt.Errorf("--data-dir: the admin token: %w", err)
		}
	}
	return nil
}
