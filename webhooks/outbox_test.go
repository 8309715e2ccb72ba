package webhooks_test

import (
	"testing"

	"github.com/scenariomock/scenariomock/webhooks"
	"github.com/scenariomock/scenariomock/webhooks/outboxtest"
)

func TestMemoryOutbox(t *testing.T) {
	outboxtest.Run(t, func(t *testing.T, queue int) webhooks.Outbox { return webhooks.NewMemoryOutbox(queue) })
}

func BenchmarkMemoryOutboxClaim(b *testing.B) {
	outboxtest.BenchClaim(b, func(b *testing.B, queue int) webhooks.Outbox { return webhooks.NewMemoryOutbox(queue) })
}
