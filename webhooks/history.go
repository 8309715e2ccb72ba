package webhooks

import "context"

// History is a log of attempts and finished deliveries that replicas
// share (state/redis has one), so that GET /__admin/webhooks and verify
// --webhook see every replica's, not only the one asked. The dispatcher
// records into it as well as into its own bounded log, and answers from
// it; when it fails (Redis away), the dispatcher answers from its own.
// Implementations are bounded (the oldest entries go first) and safe for
// concurrent use.
type History interface {
	// Record appends a, and d when a ended its delivery (nil otherwise),
	// and returns a's sequence number across the replicas.
	Record(ctx context.Context, a *Attempt, d *Delivery) (int64, error)
	// Attempts returns the attempts kept, oldest first.
	Attempts(ctx context.Context) ([]Attempt, error)
	// Finished returns the finished deliveries kept, oldest first.
	Finished(ctx context.Context) ([]Delivery, error)
	// Reset forgets every attempt and delivery.
	Reset(ctx context.Context) error
}
