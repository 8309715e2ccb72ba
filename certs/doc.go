// Package certs makes the certificates scenariomock serves HTTPS with
// when it is given none: self-signed certificates for a list of host
// names and addresses, their PEM encoding (scenariomock cert writes them
// for a team to trust once) and their SHA-256 fingerprints (the ready log
// prints one, to compare with what a client was shown).
//
// It knows nothing of serving; main and server call it. It owns no state
// and its functions are safe for concurrent use.
package certs
