// Package redistest starts a real redis-server (Debian's package) for
// tests: on a free port, without persistence, in a temporary directory,
// stopped when the test ends. It owns nothing else. Tests use it instead
// of a fake, so that the Redis store is tested against what users run.
package redistest
