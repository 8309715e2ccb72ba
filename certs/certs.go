package certs

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"strings"
	"time"
)

// Loopback are the names every certificate made here covers besides
// those asked for, so that a certificate made for a container's name
// also serves a test on the same machine.
var Loopback = []string{"localhost", "127.0.0.1", "::1"}

// SelfSigned makes a certificate for hosts (names and IP addresses, with
// Loopback added) and its ECDSA P-256 key, valid from an hour before now
// (for clocks a little behind) for validFor. It is its own issuer and
// marked as a CA, so that a client can add it to its trust store as is:
// Go's x509.CertPool, curl --cacert, NODE_EXTRA_CA_CERTS, a browser's
// authorities.
func SelfSigned(hosts []string, now time.Time, validFor time.Duration) (tls.Certificate, error) {
	if validFor <= 0 {
		return tls.Certificate{}, errors.New("validity must be positive")
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return tls.Certificate{}, err
	}
	tpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{Organization: []string{"scenariomock"}, CommonName: "scenariomock " + first(hosts)},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(validFor),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true, // it signs nothing but itself
	}
	seen := map[string]bool{}
	for _, h := range append(append([]string(nil), hosts...), Loopback...) {
		h = strings.Trim(strings.TrimSpace(h), "[]")
		if h == "" || seen[strings.ToLower(h)] {
			continue
		}
		seen[strings.ToLower(h)] = true
		if ip := net.ParseIP(h); ip != nil {
			tpl.IPAddresses = append(tpl.IPAddresses, ip)
		} else {
			tpl.DNSNames = append(tpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tpl, tpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("create certificate: %w", err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, nil
}

func first(hosts []string) string {
	for _, h := range hosts {
		if h = strings.TrimSpace(h); h != "" {
			return h
		}
	}
	return Loopback[0]
}

// EncodePEM returns c's certificate chain and its private key in PEM, as
// --tls-cert and --tls-key read them.
func EncodePEM(c tls.Certificate) (certPEM, keyPEM []byte, err error) {
	for _, der := range c.Certificate {
		certPEM = append(certPEM, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})...)
	}
	der, err := x509.MarshalPKCS8PrivateKey(c.PrivateKey)
	if err != nil {
		return nil, nil, fmt.Errorf("encode key: %w", err)
	}
	return certPEM, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// Fingerprint returns the SHA-256 of a DER certificate as browsers and
// openssl x509 -fingerprint -sha256 show it: upper-case hex byte pairs
// joined by colons.
func Fingerprint(der []byte) string {
	sum := sha256.Sum256(der)
	h := strings.ToUpper(hex.EncodeToString(sum[:]))
	var b strings.Builder
	for i := 0; i < len(h); i += 2 {
		if i > 0 {
			b.WriteByte(':')
		}
		b.WriteString(h[i : i+2])
	}
	return b.String()
}
