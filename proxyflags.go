package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/scenariomock/scenariomock/record"
	"github.com/scenariomock/scenariomock/upstream"
)

// proxyOptions are the flags of spy mode and recording, on serve and on
// record.
type proxyOptions struct {
	unmatched string   // --proxy-unmatched URL (record: --target)
	insecure  bool     // --proxy-insecure
	record    string   // --record DIR (record: --out)
	headers   []string // --record-headers
	latency   bool     // --record-latency
	per       string   // --record-sequence-per
	// recording: the record command, which serves no scenarios.
	recording bool
}

func (p *proxyOptions) flags(f *pflag.FlagSet, recordCmd bool) {
	if recordCmd {
		f.StringVar(&p.unmatched, "target", "", "the upstream to record (required): http(s)://host[:port][/base]")
		f.StringVar(&p.unmatched, "upstream", "", "the same as --target")
		f.StringVar(&p.record, "out", "recorded", "directory the recording is written to when the command stops (Ctrl-C)")
	} else {
		f.StringVar(&p.unmatched, "proxy-unmatched", "", "forward requests no route matches to this upstream instead of answering 404 (spy mode); journaled as proxied")
		f.StringVar(&p.record, "record", "", "record every proxied exchange and write it as scenario files into this directory on shutdown")
	}
	f.BoolVar(&p.insecure, "proxy-insecure", false, "do not verify upstreams' TLS certificates (self-signed test upstreams)")
	f.StringSliceVar(&p.headers, "record-headers", nil, "request headers written in the recording (in a comment, credentials redacted); no other is written")
	f.BoolVar(&p.latency, "record-latency", false, "write each answer's upstream latency as its delay:")
	f.StringVar(&p.per, "record-sequence-per", "", "write sequence: { per: ... } on recorded sequences, e.g. header.Idempotency-Key")
}

// recorder checks the flags and returns the recorder --record or record
// asks for (nil for none): the directory must be writable now, not when
// the recording stops.
func (p *proxyOptions) recorder() (*record.Recorder, error) {
	if p.unmatched != "" {
		if _, err := upstream.ParseURL(p.unmatched); err != nil {
			return nil, withCode(exitUsage, fmt.Errorf("%s: %w", p.urlFlag(), err))
		}
	} else if p.recording {
		return nil, withCode(exitUsage, errors.New("--target is required: the upstream to record"))
	}
	if p.record == "" {
		return nil, nil
	}
	if err := record.CheckDir(p.record); err != nil {
		return nil, withCode(exitUsage, fmt.Errorf("%s %s: %w", p.dirFlag(), p.record, err))
	}
	if err := record.CheckSequencePer(p.per); err != nil {
		return nil, withCode(exitUsage, fmt.Errorf("--record-sequence-per %w", err))
	}
	// MockURL is set once the listener is bound (mockURL): --addr may
	// name port 0.
	return record.New(record.Options{
		Upstream: p.unmatched, Headers: p.headers, Latency: p.latency, SequencePer: p.per,
	}), nil
}

// mockURL is the base URL clients reach the mock at on the listener
// bound to addr, as a recording rewrites the upstream's URLs to: an
// unspecified address (0.0.0.0, ::) is reached on loopback.
func mockURL(addr net.Addr, tls bool) string {
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return ""
	}
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	scheme := "http://"
	if tls {
		scheme = "https://"
	}
	return scheme + net.JoinHostPort(host, port)
}

func (p *proxyOptions) dirFlag() string {
	if p.recording {
		return "--out"
	}
	return "--record"
}

func (p *proxyOptions) urlFlag() string {
	if p.recording {
		return "--target"
	}
	return "--proxy-unmatched"
}

// writeRecording writes what rec holds into --record's directory, once
// the server has stopped.
func (p *proxyOptions) writeRecording(rec *record.Recorder, log *slog.Logger) error {
	if rec == nil {
		return nil
	}
	files, err := rec.Write(p.record)
	if err != nil {
		return fmt.Errorf("recording not written: %w", err)
	}
	log.Info("recording written", "dir", p.record, "files", len(files), "skipped", rec.Skipped())
	return nil
}

// newRecordCmd is serve as a recording proxy: no scenarios, everything
// forwarded to --target and written to --out when it stops.
func newRecordCmd(stderr io.Writer) *cobra.Command {
	cmd := newServeCmdFor(stderr, true)
	return cmd
}
