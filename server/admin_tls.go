package server

import (
	"encoding/pem"
	"net/http"
	"strconv"
)

// adminCertificate serves the certificate chain the server answers TLS
// with.
const adminCertificate = adminPrefix + "/tls/certificate"

// handleCertificate answers the certificate chain the server presents
// (--tls-self-signed's, or --tls-cert's), leaf first, as PEM: a client
// fetches it once (curl -k, or over plain loopback from a test harness)
// and then trusts only it, with curl --cacert, NODE_EXTRA_CA_CERTS or an
// x509.CertPool, instead of skipping verification for every call. Without
// TLS it is a 404 problem. It needs no admin token (adminOpen): every TLS
// handshake sends the same bytes to anyone who connects.
func (s *Server) handleCertificate(w http.ResponseWriter, r *http.Request) {
	var chain []byte
	if c := s.opts.TLS; c != nil && len(c.Certificates) > 0 {
		for _, der := range c.Certificates[0].Certificate {
			chain = append(chain, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})...)
		}
	}
	if len(chain) == 0 {
		writeProblem(w, newProblem(http.StatusNotFound, "This server does not serve TLS, so it has no certificate: start it with --tls-self-signed or --tls-cert/--tls-key."))
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/x-pem-file")
	h.Set("Content-Length", strconv.Itoa(len(chain)))
	h.Set("Cache-Control", "no-store") // a restart makes a new self-signed one
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(chain)
	}
}
