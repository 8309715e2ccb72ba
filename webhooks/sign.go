package webhooks

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// staleBy is how old a stale-timestamp delivery's timestamp is: past the
// 300 s tolerance of Stripe's and Standard Webhooks' libraries.
const staleBy = time.Hour

// sign sets the signature headers of one attempt of a delivery. neg is the
// attempt's negative fault, if any, which spoils the signature the way it
// says. id is the event id (webhook-id for Standard Webhooks).
func sign(h http.Header, e *Endpoint, id string, now time.Time, body []byte, neg Negative) {
	if e.Signing == None || e.Signing == "" || neg == NoSignature {
		return
	}
	if neg == StaleTimestamp {
		now = now.Add(-staleBy)
	}
	ts := strconv.FormatInt(now.Unix(), 10)
	secrets := e.Secrets
	if neg == WrongSecret {
		secrets = []string{wrongSecret(e)}
	}
	switch e.Signing {
	case Stripe:
		var b strings.Builder
		b.WriteString("t=")
		b.WriteString(ts)
		for _, s := range secrets {
			mac := hmac.New(sha256.New, []byte(s))
			mac.Write([]byte(ts))
			mac.Write([]byte("."))
			mac.Write(body)
			sig := hex.EncodeToString(mac.Sum(nil))
			if neg == BadSignature {
				sig = flipHex(sig)
			}
			b.WriteString(",v1=")
			b.WriteString(sig)
		}
		h.Set("Stripe-Signature", b.String())
	case Standard:
		var sigs []string
		for _, s := range secrets {
			key, err := standardKey(s)
			if err != nil {
				continue // Check refused it; a wrong secret is made valid
			}
			mac := hmac.New(sha256.New, key)
			mac.Write([]byte(id))
			mac.Write([]byte("."))
			mac.Write([]byte(ts))
			mac.Write([]byte("."))
			mac.Write(body)
			sum := mac.Sum(nil)
			if neg == BadSignature {
				sum[0] ^= 0xff
			}
			sigs = append(sigs, "v1,"+base64.StdEncoding.EncodeToString(sum))
		}
		h.Set("Webhook-Id", id)
		h.Set("Webhook-Timestamp", ts)
		h.Set("Webhook-Signature", strings.Join(sigs, " "))
	}
}

// wrongSecret is a secret of the endpoint's kind that is not its own.
func wrongSecret(e *Endpoint) string {
	if e.Signing == Standard {
		return "whsec_" + base64.StdEncoding.EncodeToString([]byte("scenariomock wrong secret"))
	}
	return "whsec_scenariomock_wrong_secret"
}

// flipHex changes the first hex digit of sig.
func flipHex(sig string) string {
	b := []byte(sig)
	if b[0] == '0' {
		b[0] = '1'
	} else {
		b[0] = '0'
	}
	return string(b)
}
