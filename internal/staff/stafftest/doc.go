// Package stafftest is the suite both stores pass for package staff's
// records (issue 56): the named tokens (RunTokens), the admin page's
// sessions (RunSessions) and the audit log (RunAudit).
package stafftest
