package certs

import (
	"crypto/tls"
	"crypto/x509"
	"testing"
	"time"
)

// TestSelfSignedVerifies checks that a certificate made here, trusted as
// is, verifies for every name it was made for and for none other.
func TestSelfSignedVerifies(t *testing.T) {
	t.Parallel()
	now := time.Now()
	c, err := SelfSigned([]string{"mock.internal", "10.1.2.3"}, now, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM, err := EncodePEM(c)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatalf("the PEM does not load back: %v", err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(certPEM)
	for _, tc := range []struct {
		name string
		ok   bool
	}{{"mock.internal", true}, {"10.1.2.3", true}, {"localhost", true}, {"127.0.0.1", true}, {"::1", true}, {"other.internal", false}} {
		_, err := leaf.Verify(x509.VerifyOptions{DNSName: tc.name, Roots: pool, CurrentTime: now})
		if (err == nil) != tc.ok {
			t.Errorf("verify for %s: %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
	if _, err := leaf.Verify(x509.VerifyOptions{DNSName: "localhost", Roots: pool, CurrentTime: now.Add(25 * time.Hour)}); err == nil {
		t.Error("the certificate verifies after it expired")
	}
}

func TestFingerprint(t *testing.T) {
	t.Parallel()
	// sha256 of the empty input.
	want := "E3:B0:C4:42:98:FC:1C:14:9A:FB:F4:C8:99:6F:B9:24:27:AE:41:E4:64:9B:93:4C:A4:95:99:1B:78:52:B8:55"
	if got := Fingerprint(nil); got != want {
		t.Errorf("Fingerprint(nil) = %s, want %s", got, want)
	}
}
