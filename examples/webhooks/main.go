// Command webhooks is the two sides of examples/webhooks: "pay" calls the
// provider (scenariomock) to create payment intents, each with an
// Idempotency-Key and a retry of it, and "receive" is a webhook receiver
// that does what a real one must: verify the Stripe-Signature with
// stripe-go, refuse what does not verify, and process each event id once,
// answering 200 to a duplicate without processing it again. On SIGTERM the
// receiver prints what it saw.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"

	"github.com/stripe/stripe-go/v85/webhook"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: webhooks pay|receive [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "pay":
		err = pay(os.Args[2:])
	case "receive":
		err = receive(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "webhooks:", err)
		os.Exit(1)
	}
}

func pay(args []string) error {
	fs := flag.NewFlagSet("pay", flag.ExitOnError)
	addr := fs.String("addr", "http://127.0.0.1:8080", "the provider")
	n := fs.Int("n", 3, "payment intents to create")
	_ = fs.Parse(args)
	for i := range *n {
		key := fmt.Sprintf("order-%d", i)
		var first string
		for try := range 2 { // the retry with the same key is a replay: no new events
			req, _ := http.NewRequest(http.MethodPost, *addr+"/v1/payment_intents", strings.NewReader(`{"amount": 9800}`))
			req.Header.Set("Idempotency-Key", key)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return err
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("POST /v1/payment_intents: %d %s", resp.StatusCode, body)
			}
			if try == 0 {
				first = string(body)
			} else if string(body) != first {
				return fmt.Errorf("the retry of %s got %s, want the first answer %s", key, body, first)
			}
		}
		fmt.Println("created", first)
	}
	return nil
}

// receiver keeps what the receiver saw.
type receiver struct {
	secret string
	mu     sync.Mutex // guards the fields below
	seen   map[string]bool
	// order is the processed events, "type object" in arrival order.
	order                       []string
	requests, refused, repeated int
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.requests++
	ev, err := webhook.ConstructEvent(body, r.Header.Get("Stripe-Signature"), rc.secret)
	if err != nil {
		rc.refused++ // the provider retries; the retry is signed properly
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if rc.seen[ev.ID] {
		rc.repeated++ // at-least-once: acknowledge, do not process again
		return
	}
	rc.seen[ev.ID] = true
	rc.order = append(rc.order, fmt.Sprintf("%s %v", ev.Type, ev.Data.Object["id"]))
}

func receive(args []string) error {
	fs := flag.NewFlagSet("receive", flag.ExitOnError)
	addr := fs.String("addr", "127.0.0.1:0", "where to listen")
	addrFile := fs.String("addr-file", "", "write the address listened on to this file")
	secret := fs.String("secret", "whsec_example_secret", "the endpoint's signing secret")
	_ = fs.Parse(args)
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	if *addrFile != "" {
		if err := os.WriteFile(*addrFile, []byte(ln.Addr().String()), 0o644); err != nil {
			return err
		}
	}
	rc := &receiver{secret: *secret, seen: map[string]bool{}}
	srv := &http.Server{Handler: rc}
	go func() {
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
		<-sig
		_ = srv.Close()
	}()
	if err := srv.Serve(ln); err != http.ErrServerClosed {
		return err
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	out, _ := json.Marshal(map[string]any{
		"requests": rc.requests, "processed": len(rc.seen), "refused": rc.refused, "duplicates": rc.repeated, "order": rc.order,
	})
	fmt.Println(string(out))
	return nil
}
