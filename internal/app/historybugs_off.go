//go:build !historybugs

package app

import "github.com/waitroom/waitroom/internal/queue"

// withHistoryBug is the store itself. The deliberate bugs the fairness
// check must catch (internal/fairness) exist only in a build with
// -tags historybugs (historybugs.go), never in this one.
func withHistoryBug(s queue.Store) queue.Store { return s }
