package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/scenariomock/scenariomock/certs"
)

// tlsOptions are the HTTPS flags serve and health share.
type tlsOptions struct {
	cert, key  string
	selfSigned bool
	// selfSignedOut is where serve writes the certificate it made, for
	// clients to trust (serve only).
	selfSignedOut string
}

func (o *tlsOptions) flags(f *pflag.FlagSet, serve bool) {
	if serve {
		f.StringVar(&o.cert, "tls-cert", "", "serve HTTPS (and HTTP/2) with this PEM certificate (chain); needs --tls-key")
		f.StringVar(&o.key, "tls-key", "", "the PEM private key of --tls-cert")
		f.BoolVar(&o.selfSigned, "tls-self-signed", false, "serve HTTPS with a certificate made at start for the --addr and --admin-addr hosts (this machine's name for 0.0.0.0), localhost, 127.0.0.1 and ::1; the ready log has its SHA-256")
		f.StringVar(&o.selfSignedOut, "tls-self-signed-out", "", "write the certificate --tls-self-signed made to this PEM file, for clients to trust (curl --cacert, NODE_EXTRA_CA_CERTS, --tls-cert of verify)")
		return
	}
	f.StringVar(&o.cert, "tls-cert", "", "ask over HTTPS, trusting this PEM certificate (as serve's --tls-cert)")
	f.StringVar(&o.key, "tls-key", "", "ignored; accepted so that SCENARIOMOCK_TLS_KEY does not get in the way")
	f.BoolVar(&o.selfSigned, "tls-self-signed", false, "ask over HTTPS, without checking the certificate (as serve's --tls-self-signed)")
	_ = f.MarkHidden("tls-key")
}

// selfSignedValidity is how long a certificate lives: a year, which
// clients that keep to the CA/Browser Forum's 398 days for trusted
// certificates accept too.
const selfSignedValidity = 365 * 24 * time.Hour

// config returns the TLS configuration serve uses, or nil for plain HTTP.
func (o tlsOptions) config(addrs []string, now time.Time) (*tls.Config, error) {
	switch {
	case o.selfSigned && (o.cert != "" || o.key != ""):
		return nil, withCode(exitUsage, errors.New("--tls-self-signed makes its own certificate: give it or --tls-cert and --tls-key, not both"))
	case o.cert != "" && o.key == "":
		return nil, withCode(exitUsage, errors.New("--tls-cert needs --tls-key, the certificate's private key"))
	case o.selfSignedOut != "" && !o.selfSigned:
		return nil, withCode(exitUsage, errors.New("--tls-self-signed-out writes the certificate --tls-self-signed makes: give both"))
	case o.key != "" && o.cert == "":
		return nil, withCode(exitUsage, errors.New("--tls-key needs --tls-cert, the certificate it belongs to"))
	case o.cert != "":
		pair, err := tls.LoadX509KeyPair(o.cert, o.key)
		if err != nil {
			return nil, fmt.Errorf("--tls-cert %s, --tls-key %s: %w", o.cert, o.key, err)
		}
		return &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}, nil
	case o.selfSigned:
		pair, err := certs.SelfSigned(listenHosts(addrs), now, selfSignedValidity)
		if err != nil {
			return nil, fmt.Errorf("--tls-self-signed: %w", err)
		}
		if o.selfSignedOut != "" {
			if err := writeCertificate(o.selfSignedOut, pair); err != nil {
				return nil, fmt.Errorf("--tls-self-signed-out: %w", err)
			}
		}
		return &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}, nil
	}
	return nil, nil
}

// writeCertificate writes c's certificate (not its key) as PEM to path,
// replacing the file of an earlier run by a rename, so that a client never
// reads half of one.
func writeCertificate(path string, c tls.Certificate) error {
	certPEM, _, err := certs.EncodePEM(c)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".cert-*.pem")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after a successful rename, nothing is there
	if _, err := tmp.Write(certPEM); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// listenHosts are the names a self-signed certificate is made for besides
// the loopback ones: the hosts of --addr and --admin-addr (empty ones are
// skipped), or this machine's name for one that listens on every
// interface.
func listenHosts(addrs []string) []string {
	var hosts []string
	for _, addr := range addrs {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			continue
		}
		if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
			name, err := os.Hostname()
			if err != nil {
				continue
			}
			host = name
		}
		if !slices.Contains(hosts, host) {
			hosts = append(hosts, host)
		}
	}
	return hosts
}

// httpClient returns the client that health, verify and requests ask
// with, and its scheme.
func (o tlsOptions) httpClient() (*http.Client, string, error) {
	switch {
	case o.cert != "":
		pem, err := os.ReadFile(o.cert)
		if err != nil {
			return nil, "", fmt.Errorf("--tls-cert: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, "", fmt.Errorf("--tls-cert %s: no PEM certificate in it", o.cert)
		}
		return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}, "https", nil
	case o.selfSigned:
		// The certificate was made when the server started and is known
		// to nobody, so it cannot be checked. health asks for nothing
		// secret; verify and requests send the admin token too, which is
		// why the README points them at --tls-cert (scenariomock cert)
		// for a server across a network.
		return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}, "https", nil
	}
	return http.DefaultClient, "http", nil
}

func newCertCmd(stdout io.Writer) *cobra.Command {
	var hosts []string
	var out, keyOut string
	var validFor time.Duration
	var force bool
	cmd := &cobra.Command{
		Use:   "cert [--host name ...] [--out cert.pem] [--key-out key.pem]",
		Short: "Write a self-signed certificate and key for serve --tls-cert/--tls-key, for clients to trust",
		Long: `Write a self-signed certificate for the given hosts (names or IP addresses;
localhost, 127.0.0.1 and ::1 are always included) and its private key, in
PEM. Generate once, give them to serve --tls-cert/--tls-key, and add the
certificate to your clients' trust stores (curl --cacert, NODE_EXTRA_CA_CERTS,
Go's x509.CertPool, the browser's authorities). The key file is created
with mode 0600; existing files are not overwritten without --force.`,
		Args: cobra.NoArgs,
		RunE: failing(func(*cobra.Command, []string) error {
			if validFor <= 0 {
				return withCode(exitUsage, fmt.Errorf("--valid-for %s: want a positive duration", validFor))
			}
			c, err := certs.SelfSigned(hosts, time.Now(), validFor)
			if err != nil {
				return err
			}
			certPEM, keyPEM, err := certs.EncodePEM(c)
			if err != nil {
				return err
			}
			if err := writeNew(out, certPEM, 0o644, force); err != nil {
				return err
			}
			if err := writeNew(keyOut, keyPEM, 0o600, force); err != nil {
				return err
			}
			names := append(append([]string(nil), c.Leaf.DNSNames...), ipStrings(c.Leaf.IPAddresses)...)
			fmt.Fprintf(stdout, "wrote %s (certificate for %s, valid until %s) and %s (its key)\nsha256 %s\n",
				out, strings.Join(names, ", "), c.Leaf.NotAfter.UTC().Format(time.DateOnly), keyOut, certs.Fingerprint(c.Certificate[0]))
			return nil
		}),
	}
	f := cmd.Flags()
	f.StringSliceVar(&hosts, "host", nil, "a host name or IP address the certificate is for (repeat, or separate with commas)")
	f.StringVar(&out, "out", "cert.pem", "where to write the certificate")
	f.StringVar(&keyOut, "key-out", "key.pem", "where to write the private key")
	f.DurationVar(&validFor, "valid-for", selfSignedValidity, "how long the certificate is valid")
	f.BoolVar(&force, "force", false, "overwrite existing files")
	return cmd
}

func ipStrings(ips []net.IP) []string {
	out := make([]string, len(ips))
	for i, ip := range ips {
		out[i] = ip.String()
	}
	return out
}

// writeNew writes data to a file that must not exist yet, unless force.
func writeNew(path string, data []byte, mode os.FileMode, force bool) error {
	flags := os.O_WRONLY | os.O_CREATE | os.O_EXCL
	if force {
		flags = os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	}
	f, err := os.OpenFile(path, flags, mode)
	if errors.Is(err, os.ErrExist) {
		return fmt.Errorf("%s exists; remove it or pass --force", path)
	}
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
