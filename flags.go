package main

import (
	"fmt"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"

	"github.com/scenariomock/scenariomock/server"
	"github.com/spf13/pflag"
)

// byteSize is a flag holding a size such as 10MiB, 512KB or 1048576.
type byteSize int64

var sizeUnits = []struct {
	suffix string
	mult   int64
}{
	{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10},
	{"GB", 1e9}, {"MB", 1e6}, {"KB", 1e3},
	{"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}, {"B", 1},
}

func (b *byteSize) String() string {
	for _, u := range sizeUnits[:3] {
		if int64(*b) >= u.mult && int64(*b)%u.mult == 0 {
			return strconv.FormatInt(int64(*b)/u.mult, 10) + u.suffix
		}
	}
	return strconv.FormatInt(int64(*b), 10)
}

func (b *byteSize) Set(s string) error {
	s = strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range sizeUnits {
		if strings.HasSuffix(strings.ToUpper(s), strings.ToUpper(u.suffix)) && len(s) > len(u.suffix) {
			s, mult = strings.TrimSpace(s[:len(s)-len(u.suffix)]), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 || n > (1<<62)/mult {
		return fmt.Errorf("want a positive size such as 10MiB, 512KB or 1048576")
	}
	*b = byteSize(n * mult)
	return nil
}

func (b *byteSize) Type() string { return "size" }

// envPrefix names the environment variables that stand in for flags:
// --max-body is SCENARIOMOCK_MAX_BODY.
const envPrefix = "SCENARIOMOCK_"

func envName(flag string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// applyEnv sets every flag not given on the command line from its
// environment variable, so containers can be configured without
// arguments. A flag on the command line wins.
func applyEnv(fs *pflag.FlagSet) error {
	var err error
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Changed || err != nil || f.Name == "help" {
			return
		}
		if v, ok := os.LookupEnv(envName(f.Name)); ok {
			if setErr := fs.Set(f.Name, v); setErr != nil {
				err = fmt.Errorf("%s=%q: %w", envName(f.Name), v, setErr)
			}
		}
	})
	return err
}

// startCPUProfile profiles until the returned function is called.
func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// explainFlag is --explain: how much a 404 tells the client of the routes
// that came closest (full, redacted or off).
type explainFlag server.ExplainMode

func (e *explainFlag) String() string { return server.ExplainMode(*e).String() }

func (e *explainFlag) Set(s string) error {
	m, err := server.ParseExplainMode(s)
	if err != nil {
		return err
	}
	*e = explainFlag(m)
	return nil
}

func (e *explainFlag) Type() string { return "mode" }

// secretsFlag is --journal-secrets: redact (the default) or keep, as
// Options.JournalKeepsSecrets says.
type secretsFlag bool

func (k *secretsFlag) String() string {
	if *k {
		return "keep"
	}
	return "redact"
}

func (k *secretsFlag) Set(s string) error {
	switch s {
	case "redact":
		*k = false
	case "keep":
		*k = true
	default:
		return fmt.Errorf("want redact or keep")
	}
	return nil
}

func (k *secretsFlag) Type() string { return "redact|keep" }
