package redis

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// notifier wakes the waiters of this process when another process (or
// this one) publishes on one of the store's channels: a Complete or
// Release of an idempotency key, an Append to the journal. It owns one
// pattern subscription on its own connection and one goroutine, which
// Close stops. Messages can be lost (while the subscription reconnects),
// so waiters also re-check after waitPoll: a bounded fallback, not a loop.
type notifier struct {
	ps     *goredis.PubSub
	cancel context.CancelFunc
	done   chan struct{} // closed when run returns
	hooks  notifyHooks

	mu      sync.Mutex // guards waiting
	waiting map[string]chan struct{}
}

// waitPoll is how long a waiter waits for a message before it looks
// again anyway.
const waitPoll = time.Second

// maxWaitChannels bounds the channels with waiters; past it every waiter
// is woken (and re-checks), which forgets channels nobody publishes on.
const maxWaitChannels = 4096

// notifyHooks are what run does besides waking waiters, on its own
// goroutine (a round trip each, at most): for a message on channel, and
// after the subscription came back from a reconnection.
type notifyHooks struct {
	channel      string
	message      func(ctx context.Context, payload string)
	resubscribed func(ctx context.Context)
	// journal's messages (the last entry ID of an append) go to
	// appended, without a round trip.
	journal  string
	appended func(payload string)
}

// startNotifier subscribes to every channel under prefix and waits for
// Redis to confirm, so that a waiter registered after it returns misses
// no message published after the waiter's check.
func startNotifier(ctx context.Context, rdb *goredis.Client, prefix string, hooks notifyHooks) (*notifier, error) {
	ps := rdb.PSubscribe(ctx)
	if err := ps.PSubscribe(ctx, escapeGlob(prefix)+"*"); err != nil {
		_ = ps.Close()
		return nil, err
	}
	for {
		msg, err := ps.Receive(ctx)
		if err != nil {
			_ = ps.Close()
			return nil, err
		}
		if _, ok := msg.(*goredis.Subscription); ok {
			break
		}
	}
	rctx, cancel := context.WithCancel(context.Background())
	n := &notifier{ps: ps, cancel: cancel, done: make(chan struct{}), hooks: hooks, waiting: map[string]chan struct{}{}}
	go n.run(rctx)
	return n, nil
}

// run receives messages until ctx ends. go-redis reconnects and
// subscribes again after an error; run backs off while Redis is away and
// wakes every waiter whenever messages may have been lost.
func (n *notifier) run(ctx context.Context) {
	defer close(n.done)
	backoff := 10 * time.Millisecond
	for {
		msg, err := n.ps.ReceiveTimeout(ctx, 10*time.Second)
		if ctx.Err() != nil {
			n.wakeAll()
			return
		}
		if err != nil {
			n.wakeAll()
			var te interface{ Timeout() bool }
			if errors.As(err, &te) && te.Timeout() {
				// Quiet for a while: check the connection is alive.
				_ = n.ps.Ping(ctx)
				continue
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, time.Second)
			continue
		}
		backoff = 10 * time.Millisecond
		switch m := msg.(type) {
		case *goredis.Message:
			switch {
			case m.Channel == n.hooks.channel && n.hooks.message != nil:
				n.hooks.message(ctx, m.Payload)
			case m.Channel == n.hooks.journal && n.hooks.appended != nil:
				n.hooks.appended(m.Payload)
			}
			n.wake(m.Channel)
		case *goredis.Subscription:
			if n.hooks.resubscribed != nil {
				n.hooks.resubscribed(ctx)
			}
			n.wakeAll() // subscribed again after a reconnect
		}
	}
}

// wait returns a channel closed at the next message on channel (or
// whenever messages may have been lost). Register before checking the
// state, then wait: a message sent after the check is not missed.
func (n *notifier) wait(channel string) <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	if c, ok := n.waiting[channel]; ok {
		return c
	}
	if len(n.waiting) >= maxWaitChannels {
		for k, c := range n.waiting {
			close(c)
			delete(n.waiting, k)
		}
	}
	c := make(chan struct{})
	n.waiting[channel] = c
	return c
}

func (n *notifier) wake(channel string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if c, ok := n.waiting[channel]; ok {
		close(c)
		delete(n.waiting, channel)
	}
}

func (n *notifier) wakeAll() {
	n.mu.Lock()
	defer n.mu.Unlock()
	for k, c := range n.waiting {
		close(c)
		delete(n.waiting, k)
	}
}

// close stops run and ends the subscription.
func (n *notifier) close() {
	n.cancel()
	_ = n.ps.Close() // unblocks a Receive in progress
	<-n.done
}

// sleep waits for wake, the poll interval or ctx, whichever comes first,
// and reports whether ctx is still live.
func sleep(ctx context.Context, wake <-chan struct{}) bool {
	t := time.NewTimer(waitPoll)
	defer t.Stop()
	select {
	case <-wake:
	case <-t.C:
	case <-ctx.Done():
		return false
	}
	return true
}

// escapeGlob escapes the characters PSUBSCRIBE patterns give a meaning.
func escapeGlob(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// closed reports whether close has run.
func (n *notifier) closed() bool {
	select {
	case <-n.done:
		return true
	default:
		return false
	}
}
