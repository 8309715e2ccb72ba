package redis

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/scenariomock/scenariomock/state"
)

// redisLocks are the objects' locks that replicas share: a name's lock is
// a key set with NX to a token of the request that holds it, which only
// that token deletes. A replica queues its own requests in local first,
// so that of the requests waiting for one object only one per replica
// asks Redis, and polls Redis (backing off from lockPollMin to
// lockPollMax) while another replica holds it.
//
// A lock expires after ttl (lockTTL), so that a replica that dies
// holding one does not stop the object for good. A hold may last longer
// than that (a route state's lock is held across the route's delay,
// which may be minutes): while it is held, its holder sets the keys'
// expiry again every ttl/3 (keepAlive), so that it still excludes the
// other replicas, and a replica that dies stops renewing.
type redisLocks struct {
	r     *Store
	local state.LocalLocks
	ttl   time.Duration // lockTTL; shorter in tests
}

const (
	lockTTL     = 30 * time.Second
	lockPollMin = time.Millisecond
	lockPollMax = 20 * time.Millisecond
)

// takeScript: KEYS the lock, the token's lost mark (ld:<token>). ARGV
// the token, the ttl in ms. Sets the lock to the token if no token holds
// it, unless the token's take was given up (unlockScript left the mark).
// Returns 1 when taken.
var takeScript = goredis.NewScript(`
if redis.call('EXISTS', KEYS[2]) == 1 then return 0 end
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end
return 0
`)

// renewScript: KEYS the lock. ARGV the token, the ttl in ms. Sets the
// lock's expiry again if the token still holds it. Returns 1 when it does.
var renewScript = goredis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
`)

// unlockScript: KEYS the lock, the token's lost mark. ARGV the token,
// lost ("1" when the take's reply was lost). Deletes the lock if the
// token still holds it. A lost take that does not hold it leaves the
// mark for the ttl: the take, sent on another connection, may run after
// this, and then must not set the lock.
var unlockScript = goredis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
if ARGV[2] == '1' then redis.call('SET', KEYS[2], '1', 'PX', ARGV[3]) end
return 0
`)

// Locks returns the objects' locks, shared by the replicas.
func (r *Store) Locks() state.Locks { return &r.locks }

// Lock takes the names' locks, here and then in Redis (state.Locks).
func (l *redisLocks) Lock(ctx context.Context, names []string, wait time.Duration) (func(), error) {
	deadline := time.Now().Add(wait)
	releaseLocal, err := l.local.Lock(ctx, names, wait)
	if err != nil {
		return nil, err
	}
	token := strconv.FormatUint(newTokenID(), 36)
	keys := make([]string, 0, len(names))
	for _, name := range names {
		key := l.key(name)
		if unanswered, err := l.take(ctx, key, token, deadline); err != nil {
			if unanswered {
				// Redis may have run the SET and its reply been lost:
				// given back with the others, in the background if
				// Redis does not answer.
				l.r.idem.retry.add(lockRelease{key, token, true}, false)
			}
			l.unlock(keys, token)
			releaseLocal()
			return nil, err
		}
		keys = append(keys, key)
	}
	k := l.keepAlive(keys, token)
	return func() {
		k.stop()
		l.unlock(keys, token)
		releaseLocal()
	}, nil
}

// renewal is a held lock's keep-alive: a timer that fires every ttl/3
// for as long as the hold lasts. A hold shorter than that (nearly all)
// costs one timer and no goroutine.
type renewal struct {
	mu      sync.Mutex
	t       *time.Timer
	stopped bool
}

// keepAlive sets the expiry of the keys that token holds again every
// ttl/3 until stop. A key that token no longer holds (it expired while
// Redis was away, and another took it) is not renewed again; a renewal
// Redis does not answer is tried again at the next tick.
func (l *redisLocks) keepAlive(keys []string, token string) *renewal {
	k := &renewal{}
	every := l.ttl / 3
	ro := l.r.rdb.Options()
	held := keys
	renew := func() {
		k.mu.Lock()
		keys := held
		k.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), ro.ReadTimeout+ro.WriteTimeout)
		var still []string
		for _, key := range keys {
			n, err := renewScript.Run(ctx, l.r.rdb, []string{key}, token, l.ttl.Milliseconds()).Int()
			if err != nil || n == 1 {
				still = append(still, key)
			}
		}
		cancel()
		k.mu.Lock()
		defer k.mu.Unlock()
		held = still
		if !k.stopped && len(held) > 0 {
			k.t.Reset(every)
		}
	}
	k.mu.Lock()
	k.t = time.AfterFunc(every, renew)
	k.mu.Unlock()
	return k
}

// stop ends the renewals; one running now finishes and sets no timer.
func (k *renewal) stop() {
	k.mu.Lock()
	k.stopped = true
	k.t.Stop()
	k.mu.Unlock()
}

// take sets key to token once no other token holds it, polling until
// deadline. unanswered says that its last attempt got no reply (Redis may
// have run it).
func (l *redisLocks) take(ctx context.Context, key, token string, deadline time.Time) (unanswered bool, err error) {
	poll := lockPollMin
	for {
		ok, err := takeScript.Run(ctx, l.r.rdb, []string{key, l.r.key("ld", token)}, token, l.ttl.Milliseconds()).Bool()
		if err != nil {
			if ctx.Err() != nil {
				return true, ctx.Err()
			}
			return true, fmt.Errorf("state: redis lock: %w", err)
		}
		if ok {
			return false, nil
		}
		left := time.Until(deadline)
		if left <= 0 {
			return false, state.ErrLockTimeout
		}
		t := time.NewTimer(min(poll, left))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return false, ctx.Err()
		}
		poll = min(2*poll, lockPollMax)
	}
}

// unlock deletes the keys that token holds. Those Redis does not answer
// for are released in the background once it does (releaser), rather
// than left held until they expire (ttl) on every replica: the
// answer is made already, and the request must not wait for Redis.
func (l *redisLocks) unlock(keys []string, token string) {
	if len(keys) == 0 {
		return
	}
	ro := l.r.rdb.Options()
	ctx, cancel := context.WithTimeout(context.Background(), ro.ReadTimeout+ro.WriteTimeout)
	defer cancel()
	for i, key := range keys {
		if err := l.release(ctx, key, token, false); err != nil {
			for _, key := range keys[i:] {
				l.r.idem.retry.add(lockRelease{key, token, false}, false)
			}
			return
		}
	}
}

// release deletes key if token still holds it; a key no longer held by
// token (expired, taken by another since) is left as it is. lost says
// the take's reply was lost (see unlockScript).
func (l *redisLocks) release(ctx context.Context, key, token string, lost bool) error {
	flag := "0"
	if lost {
		flag = "1"
	}
	if err := unlockScript.Run(ctx, l.r.rdb, []string{key, l.r.key("ld", token)}, token, flag, l.ttl.Milliseconds()).Err(); err != nil && !errors.Is(err, goredis.Nil) {
		return fmt.Errorf("state: redis unlock: %w", err)
	}
	return nil
}

// key is the Redis key of a name's lock; a long name is hashed, so that
// the key stays short whatever the name.
func (l *redisLocks) key(name string) string {
	if len(name) > 128 {
		sum := sha256.Sum256([]byte(name))
		name = "#" + hex.EncodeToString(sum[:])
	}
	return l.r.key("l", name)
}
