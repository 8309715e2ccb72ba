package main

import (
	"bytes"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/scenariomock/scenariomock/certs"
)

// TestTLSCertCommand: a certificate written by `scenariomock cert`, given
// to serve --tls-cert/--tls-key and to a Go client's trust store, serves
// HTTP/2 for every loopback name; health asks it over HTTPS.
func TestTLSCertCommand(t *testing.T) {
	t.Parallel()
	bin := binary(t)
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	out, err := exec.Command(bin, "cert", "--host", "mock.test", "--out", certFile, "--key-out", keyFile).CombinedOutput()
	if err != nil {
		t.Fatalf("cert: %v\n%s", err, out)
	}
	if st, err := os.Stat(keyFile); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("key file: %v %v, want mode 0600", st, err)
	}
	if out, err := exec.Command(bin, "cert", "--out", certFile, "--key-out", keyFile).CombinedOutput(); err == nil || !strings.Contains(string(out), "exists") {
		t.Errorf("cert over existing files: %v %s, want a refusal", err, out)
	}
	_, addr, logs := started(t, bin, "--tls-cert", certFile, "--tls-key", keyFile)
	pem, err := os.ReadFile(certFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		t.Fatal("no certificate in cert.pem")
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}}
	_, port, _ := net.SplitHostPort(addr)
	// serve listens on 127.0.0.1 only; ::1 is in certs' own test.
	for _, host := range []string{"localhost", "127.0.0.1"} {
		url := "https://" + host + ":" + port + "/payments/pay_demo_0001"
		resp, err := client.Get(url)
		if err != nil {
			t.Fatalf("GET %s: %v\n%s", url, err, logs)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.ProtoMajor != 2 || !strings.Contains(string(body), "pay_demo_0001") {
			t.Errorf("GET %s: %s %s %s, want 200 over HTTP/2", url, resp.Proto, resp.Status, body)
		}
	}
	// An untrusting client is refused: the server really presents this
	// certificate, not one any client accepts.
	if _, err := http.Get("https://" + addr + "/payments/pay_demo_0001"); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("client without the certificate: %v, want a certificate error", err)
	}
	if out, err := exec.Command(bin, "health", "--addr", addr, "--tls-cert", certFile, "--timeout", patience.String()).CombinedOutput(); err != nil || !strings.Contains(string(out), `"status": "ok"`) {
		t.Errorf("health --tls-cert: %v %s", err, out)
	}
	out, err = exec.Command(bin, "health", "--addr", addr, "--timeout", patience.String()).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "speaks HTTPS") {
		t.Errorf("health over plain HTTP: %v %s, want a failure that says why", err, out)
	}
}

// TestTLSSelfSigned: --tls-self-signed serves a certificate whose SHA-256
// is the one in the ready line, for the loopback names.
func TestTLSSelfSigned(t *testing.T) {
	t.Parallel()
	bin := binary(t)
	_, addr, logs := started(t, bin, "--tls-self-signed", "--cors")
	m := regexp.MustCompile(`msg=ready .*scheme=https sha256=([0-9A-F:]{95})`).FindStringSubmatch(logs.String())
	if m == nil {
		t.Fatalf("no fingerprint in the ready line:\n%s", logs)
	}
	var served *x509.Certificate
	client := &http.Client{Transport: &http.Transport{ForceAttemptHTTP2: true, TLSClientConfig: &tls.Config{
		InsecureSkipVerify: true, // checked below, against the logged fingerprint
		VerifyConnection: func(cs tls.ConnectionState) error {
			served = cs.PeerCertificates[0]
			return nil
		},
	}}}
	resp, err := client.Get("https://" + addr + "/payments/pay_demo_0001")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.ProtoMajor != 2 {
		t.Errorf("protocol %s, want HTTP/2", resp.Proto)
	}
	if got := certs.Fingerprint(served.Raw); got != m[1] {
		t.Errorf("served certificate's SHA-256 %s, logged %s", got, m[1])
	}
	if fmt.Sprintf("%X", sha256.Sum256(served.Raw)) != strings.ReplaceAll(m[1], ":", "") {
		t.Errorf("the logged fingerprint is not the SHA-256 of the certificate")
	}
	// --cors reaches the server: a preflight is answered before routing.
	req, _ := http.NewRequest("OPTIONS", "https://"+addr+"/payments", nil)
	req.Header.Set("Origin", "http://localhost:5173")
	req.Header.Set("Access-Control-Request-Method", "POST")
	if resp, err := client.Do(req); err != nil {
		t.Error(err)
	} else {
		resp.Body.Close()
		if resp.StatusCode != 204 || resp.Header.Get("Access-Control-Allow-Origin") != "http://localhost:5173" {
			t.Errorf("preflight with --cors: %s %v", resp.Status, resp.Header)
		}
	}
	if err := served.VerifyHostname("localhost"); err != nil {
		t.Errorf("not valid for localhost: %v", err)
	}
	if err := served.VerifyHostname("127.0.0.1"); err != nil {
		t.Errorf("not valid for 127.0.0.1: %v", err)
	}
}

// TestTLSFlags: the TLS flags that do not go together are usage errors.
func TestTLSFlags(t *testing.T) {
	t.Parallel()
	bin := binary(t)
	for _, args := range [][]string{
		{"--tls-cert", "c.pem"},
		{"--tls-key", "k.pem"},
		{"--tls-self-signed", "--tls-cert", "c.pem", "--tls-key", "k.pem"},
	} {
		out, err := exec.Command(bin, append([]string{"serve", "--addr", "127.0.0.1:0"}, args...)...).CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != exitUsage {
			t.Errorf("serve %v: %v %s, want exit %d", args, err, out, exitUsage)
		}
	}
	out, err := exec.Command(bin, "serve", "--addr", "127.0.0.1:0", "--tls-cert", "/nonexistent.pem", "--tls-key", "/nonexistent.pem").CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitFailure || !strings.Contains(string(out), "/nonexistent.pem") {
		t.Errorf("unreadable certificate: %v %s, want exit 1 naming the file", err, out)
	}
}

// TestTLSAdminAddr: with --admin-addr the admin listener speaks HTTPS
// too, with the certificate the ready line names, and health asks it
// over HTTPS with the same variables as serve.
func TestTLSAdminAddr(t *testing.T) {
	t.Parallel()
	bin := binary(t)
	_, _, logs := startedEnv(t, bin, nil, "--tls-self-signed", "--admin-addr", "127.0.0.1:0")
	m := regexp.MustCompile(`msg=ready addr=\S+ admin_addr=(\S+) scheme=https sha256=([0-9A-F:]{95})`).FindStringSubmatch(logs.String())
	if m == nil {
		t.Fatalf("no admin address, scheme and fingerprint in the ready line:\n%s", logs)
	}
	admin := m[1]
	var served *x509.Certificate
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{
		InsecureSkipVerify: true, // checked below, against the logged fingerprint
		VerifyConnection: func(cs tls.ConnectionState) error {
			served = cs.PeerCertificates[0]
			return nil
		},
	}}}
	resp, err := client.Get("https://" + admin + "/__admin/health")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || certs.Fingerprint(served.Raw) != m[2] {
		t.Errorf("admin health over HTTPS: %s, certificate %s, want 200 and the logged %s", resp.Status, certs.Fingerprint(served.Raw), m[2])
	}
	health := exec.Command(bin, "health", "--timeout", patience.String())
	health.Env = append(os.Environ(), "SCENARIOMOCK_ADMIN_ADDR="+admin, "SCENARIOMOCK_TLS_SELF_SIGNED=true")
	if out, err := health.CombinedOutput(); err != nil || !strings.Contains(string(out), `"status": "ok"`) {
		t.Errorf("health --admin-addr over HTTPS: %v %s", err, out)
	}
}

// TestListenHosts: a self-signed certificate names the hosts of --addr
// and --admin-addr, once each, and this machine's name for 0.0.0.0.
func TestListenHosts(t *testing.T) {
	t.Parallel()
	name, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		addrs []string
		want  []string
	}{
		{[]string{"127.0.0.1:8080", ""}, []string{"127.0.0.1"}},
		{[]string{"mock.internal:8080", "mock.internal:9090"}, []string{"mock.internal"}},
		{[]string{"127.0.0.1:8080", "admin.internal:9090"}, []string{"127.0.0.1", "admin.internal"}},
		{[]string{"0.0.0.0:8080", ":9090"}, []string{name}},
	} {
		if got := listenHosts(tc.addrs); !slices.Equal(got, tc.want) {
			t.Errorf("listenHosts(%q) = %q, want %q", tc.addrs, got, tc.want)
		}
	}
}

// TestVerifyTLS: verify and requests ask an HTTPS server with the flags
// health takes, and say what to pass when they are missing.
func TestVerifyTLS(t *testing.T) {
	t.Parallel()
	bin := binary(t)
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if out, err := exec.Command(bin, "cert", "--out", certFile, "--key-out", keyFile).CombinedOutput(); err != nil {
		t.Fatalf("cert: %v\n%s", err, out)
	}
	_, withCert, _ := started(t, bin, "--tls-cert", certFile, "--tls-key", keyFile)
	_, selfSigned, _ := started(t, bin, "--tls-self-signed")
	insecure := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	for _, addr := range []string{withCert, selfSigned} {
		resp, err := insecure.Get("https://" + addr + "/payments/pay_demo_0001")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	run := func(args ...string) (int, string) {
		code, stdout, stderr := runCLI(t, bin, nil, args...)
		return code, stdout + stderr
	}
	for _, tc := range []struct {
		args []string
		code int
		out  string
	}{
		{[]string{"verify", "--addr", withCert, "--tls-cert", certFile, "--path", "/payments/*", "--count", "1"}, 0, "ok: 1 request"},
		{[]string{"verify", "--addr", "https://" + withCert, "--tls-cert", certFile, "--path", "/payments/*", "--count", "1"}, 0, "ok: 1 request"},
		{[]string{"verify", "--addr", selfSigned, "--tls-self-signed", "--path", "/payments/*", "--count", "1"}, 0, "ok: 1 request"},
		{[]string{"requests", "--addr", selfSigned, "--tls-self-signed"}, 0, "/payments/pay_demo_0001"},
		{[]string{"verify", "--addr", selfSigned, "--count", "1"}, 2, "the server speaks HTTPS: pass --tls-cert or --tls-self-signed"},
		{[]string{"verify", "--addr", "https://" + selfSigned, "--count", "1"}, 2, "pass --tls-cert with the certificate serve uses"},
		{[]string{"verify", "--addr", selfSigned, "--tls-cert", certFile, "--count", "1"}, 2, "pass --tls-cert with the certificate serve uses"},
	} {
		code, out := run(tc.args...)
		if code != tc.code || !strings.Contains(out, tc.out) {
			t.Errorf("%s: exit %d, want %d; output:\n%s\nwant it to contain %q", strings.Join(tc.args, " "), code, tc.code, out, tc.out)
		}
		if code == 2 && strings.Contains(out, "HTTPS server") && strings.Contains(out, "for usage") {
			t.Errorf("%s: a server's refusal ends with the usage hint:\n%s", strings.Join(tc.args, " "), out)
		}
	}
}

// TestTLSSelfSignedOut: --tls-self-signed-out writes the certificate
// serve made, and a client that trusts that file alone connects with the
// certificate checked, as curl --cacert and NODE_EXTRA_CA_CERTS do;
// verify --tls-cert takes it too.
func TestTLSSelfSignedOut(t *testing.T) {
	t.Parallel()
	bin := binary(t)
	dir := t.TempDir()
	certFile := filepath.Join(dir, "cert.pem")
	if err := os.WriteFile(certFile, []byte("an earlier run's\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, addr, _ := started(t, bin, "--tls-self-signed", "--tls-self-signed-out", certFile)
	pem, err := os.ReadFile(certFile)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(pem), "PRIVATE KEY") {
		t.Fatal("the file has the private key")
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		t.Fatalf("no certificate in %s: %q", certFile, pem)
	}
	_, port, _ := net.SplitHostPort(addr)
	for _, host := range []string{"127.0.0.1", "localhost"} {
		client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
		resp, err := client.Get("https://" + net.JoinHostPort(host, port) + "/payments/pay_demo_0001")
		if err != nil {
			t.Fatalf("%s, trusting %s: %v", host, certFile, err)
		}
		resp.Body.Close()
	}
	if code, stdout, stderr := runCLI(t, bin, nil, "verify", "--addr", addr, "--tls-cert", certFile, "--path", "/payments/*"); code != 0 {
		t.Errorf("verify --tls-cert %s: exit %d\n%s%s", certFile, code, stdout, stderr)
	}
	if curl, err := exec.LookPath("curl"); err == nil {
		if out, err := exec.Command(curl, "-sS", "--cacert", certFile, "https://localhost:"+port+"/__admin/health").CombinedOutput(); err != nil {
			t.Errorf("curl --cacert: %v %s", err, out)
		}
	}
	out, err := exec.Command(bin, "serve", "--addr", "127.0.0.1:0", "--tls-self-signed-out", certFile).CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitUsage || !strings.Contains(string(out), "give both") {
		t.Errorf("--tls-self-signed-out alone: %v %s, want exit %d", err, out, exitUsage)
	}
}

// TestTLSCertificateEndpoint: GET /__admin/tls/certificate answers the
// certificate --tls-self-signed made, as PEM, without the admin token
// (every handshake sends it anyway); a client that fetched it once
// without checking, then trusts it alone, gets its requests checked:
// Go's client, curl --cacert <(curl -k ...) and NODE_EXTRA_CA_CERTS.
// Without TLS the path is a 404 problem.
func TestTLSCertificateEndpoint(t *testing.T) {
	t.Parallel()
	bin := binary(t)
	_, addr, _ := started(t, bin, "--tls-self-signed", "--admin-token", "t0ken")
	_, port, _ := net.SplitHostPort(addr)
	certURL := "https://localhost:" + port + "/__admin/tls/certificate"

	// Unchecked, as curl -k: the only time verification is skipped.
	insecure := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	resp, err := insecure.Get(certURL)
	if err != nil {
		t.Fatal(err)
	}
	pemBytes, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/x-pem-file" {
		t.Fatalf("GET %s: %s %s\n%s", certURL, resp.Status, resp.Header.Get("Content-Type"), pemBytes)
	}
	if strings.Contains(string(pemBytes), "PRIVATE KEY") {
		t.Fatal("the answer has the private key")
	}
	// It is the certificate the server presents.
	served := resp.TLS.PeerCertificates[0].Raw
	block, _ := pem.Decode(pemBytes)
	if block == nil || block.Type != "CERTIFICATE" || !bytes.Equal(block.Bytes, served) {
		t.Fatalf("the PEM is not the served certificate: %q", pemBytes)
	}

	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pemBytes) {
		t.Fatalf("no certificate in %q", pemBytes)
	}
	checked := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	for _, host := range []string{"127.0.0.1", "localhost"} {
		resp, err := checked.Get("https://" + net.JoinHostPort(host, port) + "/payments/pay_demo_0001")
		if err != nil {
			t.Fatalf("%s, trusting the fetched certificate alone: %v", host, err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("%s: %s", host, resp.Status)
		}
	}
	// A client trusting nothing but the system's roots is refused: the
	// checks above did check.
	if resp, err := http.Get("https://localhost:" + port + "/payments/pay_demo_0001"); err == nil {
		resp.Body.Close()
		t.Fatal("a client without the certificate connected: nothing was checked")
	}

	// As the README shows it, with the real tools.
	if _, err := exec.LookPath("curl"); err != nil {
		t.Fatal("curl is not installed (apt-get install -y curl)")
	}
	script := `curl -sS --fail --cacert <(curl -sS -k "$1") "$2"`
	out, err := exec.Command("bash", "-c", script, "bash", certURL, "https://localhost:"+port+"/payments/pay_demo_0001").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "pay_demo_0001") {
		t.Errorf("curl --cacert <(curl -k %s): %v\n%s", certURL, err, out)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node is not installed (apt-get install -y nodejs)")
	}
	certFile := filepath.Join(t.TempDir(), "cert.pem")
	if err := os.WriteFile(certFile, pemBytes, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, "-e", `fetch(process.argv[1]).then(async (r) => { console.log(r.status, await r.text()); process.exit(r.ok ? 0 : 1); }, (e) => { console.error(e.cause || e); process.exit(1); })`,
		"https://localhost:"+port+"/payments/pay_demo_0001")
	cmd.Env = append(os.Environ(), "NODE_EXTRA_CA_CERTS="+certFile)
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "pay_demo_0001") {
		t.Errorf("node with NODE_EXTRA_CA_CERTS: %v\n%s", err, out)
	}

	// Without TLS: a 404 problem that says how to get one.
	_, plain, _ := started(t, bin)
	resp, err = http.Get("http://" + plain + "/__admin/tls/certificate")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 404 || resp.Header.Get("Content-Type") != "application/problem+json" || !strings.Contains(string(body), "--tls-self-signed") {
		t.Errorf("without TLS: %s %s %s", resp.Status, resp.Header.Get("Content-Type"), body)
	}
}
