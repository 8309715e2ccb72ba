package record

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"

	"net/url"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// secretWords are the parts of a field name that mark its value as a
// credential, matched in the name lower-cased with separators removed
// (X-Api-Key, api_key and apiKey alike).
var secretWords = []string{"token", "secret", "password", "passwd", "key", "card", "cvc", "cvv", "authoriz", "cookie", "session", "signature", "credential"}

// notSecretNames are names (lower-cased, separators removed) that hold a
// secret word and name no credential: an idempotency key is the client's
// retry token, which a recording keeps when --record-headers lists it
// (the README's own example) and in a body (Stripe's event
// request.idempotency_key), so that it replays as it was.
var notSecretNames = []string{"idempotencykey"}

// isSecretName reports whether a header, query or JSON field name looks
// like it carries a credential.
func isSecretName(name string) bool {
	var b strings.Builder
	for _, c := range strings.ToLower(name) {
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' {
			b.WriteRune(c)
		}
	}
	n := b.String()
	if slices.Contains(notSecretNames, n) {
		return false
	}
	for _, w := range secretWords {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// minSecretLen is the shortest credential value the final check looks
// for: a shorter one (a CVC) is redacted by its field name, but searching
// every file for three digits would refuse honest recordings.
const minSecretLen = 6

// collectSecrets adds the credential values of x to secrets, each with
// where it was seen (never the value itself, for messages).
func collectSecrets(x *Exchange, secrets map[string]string) {
	at := x.Method + " " + x.Path
	add := func(v, where string) {
		v = strings.TrimSpace(v)
		if len(v) >= minSecretLen {
			if _, ok := secrets[v]; !ok {
				secrets[v] = where + " of " + at
			}
		}
	}
	for name, vs := range x.RequestHeader {
		for _, v := range vs {
			switch {
			case name == "Cookie":
				for _, c := range strings.Split(v, ";") {
					if _, val, ok := strings.Cut(c, "="); ok {
						add(val, "a cookie")
					}
				}
			case isSecretName(name):
				where := "request header " + name
				add(v, where)
				if scheme, cred, ok := strings.Cut(v, " "); ok {
					add(cred, where)
					if strings.EqualFold(scheme, "Basic") {
						if dec, err := base64.StdEncoding.DecodeString(strings.TrimSpace(cred)); err == nil {
							add(string(dec), where)
							if _, pw, ok := strings.Cut(string(dec), ":"); ok {
								add(pw, where)
							}
						}
					}
				}
			}
		}
	}
	if q, err := url.ParseQuery(x.RawQuery); err == nil {
		for k, vs := range q {
			if isSecretName(k) {
				for _, v := range vs {
					add(v, "query parameter "+k)
				}
			}
		}
	}
	mt, _, _ := mime.ParseMediaType(x.RequestHeader.Get("Content-Type"))
	switch {
	case mt == "application/x-www-form-urlencoded":
		if q, err := url.ParseQuery(string(x.RequestBody)); err == nil {
			for k, vs := range q {
				if isSecretName(k) {
					for _, v := range vs {
						add(v, "form field "+k)
					}
				}
			}
		}
	case json.Valid(x.RequestBody):
		var v any
		d := json.NewDecoder(bytes.NewReader(x.RequestBody))
		d.UseNumber()
		if d.Decode(&v) == nil {
			walkSecrets(v, false, "", add)
		}
	}
	for _, v := range x.Header.Values("Set-Cookie") {
		if nv, _, _ := strings.Cut(v, ";"); nv != "" {
			if _, val, ok := strings.Cut(nv, "="); ok {
				add(val, "a Set-Cookie")
			}
		}
	}
}

// walkSecrets adds every scalar under a secret-named JSON field.
func walkSecrets(v any, inSecret bool, field string, add func(v, where string)) {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			walkSecrets(e, inSecret || isSecretName(k), k, add)
		}
	case []any:
		for _, e := range t {
			walkSecrets(e, inSecret, field, add)
		}
	case string:
		if inSecret {
			add(t, "JSON field "+field)
		}
	case json.Number:
		if inSecret {
			add(t.String(), "JSON field "+field)
		}
	}
}

// checkSecrets refuses files that contain a credential value.
func checkSecrets(files map[string][]byte, secrets map[string]string) error {
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	slices.Sort(names)
	var errs []error
	for _, n := range names {
		for v, where := range secrets {
			if bytes.Contains(files[n], []byte(v)) {
				errs = append(errs, fmt.Errorf("record: refusing to write %s: it contains the value of %s, a credential (redact it upstream of the recording or remove that exchange)", n, where))
				break
			}
		}
	}
	return errors.Join(errs...)
}

func redactQuery(raw string) string {
	parts := strings.Split(raw, "&")
	for i, p := range parts {
		k, _, ok := strings.Cut(p, "=")
		name, err := url.QueryUnescape(k)
		if err != nil {
			name = k
		}
		if ok && isSecretName(name) {
			parts[i] = k + "=" + redacted
		}
	}
	return strings.Join(parts, "&")
}

func redactSetCookie(v string) string {
	nv, rest, hasRest := strings.Cut(v, ";")
	name, _, _ := strings.Cut(nv, "=")
	out := strings.TrimSpace(name) + "=" + redacted
	if hasRest {
		out += ";" + rest
	}
	return out
}

// jsonNode parses a JSON document into a YAML node, keeping key order and
// number text, with the values of secret-named fields redacted.
func jsonNode(body []byte) (*yaml.Node, error) {
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber()
	n, err := jsonValue(d)
	if err != nil {
		return nil, fmt.Errorf("JSON body: %w", err)
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, errors.New("JSON body: data after the document")
	}
	return n, nil
}

// redactNode redacts the value of a secret-named field. A scalar becomes
// "REDACTED"; an object or a list (Stripe's card: {brand, last4,
// exp_month}) keeps its shape, its strings "REDACTED" and its numbers 0,
// so that a typed client still decodes the recorded answer (a struct
// field given the string "REDACTED" fails to unmarshal).
func redactNode(v *yaml.Node) *yaml.Node {
	switch v.Kind {
	case yaml.MappingNode, yaml.SequenceNode:
		for i, c := range v.Content {
			if v.Kind == yaml.MappingNode && i%2 == 0 {
				continue // a key
			}
			v.Content[i] = redactNode(c)
		}
		return v
	case yaml.ScalarNode:
		switch v.Tag {
		case "!!int", "!!float":
			return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: "0"}
		case "!!bool", "!!null":
			return v
		}
	}
	return str(redacted)
}

// duplicateKeys reports whether a mapping in n, at any depth, has a key
// twice.
func duplicateKeys(n *yaml.Node) bool {
	if n.Kind == yaml.MappingNode {
		seen := make(map[string]bool, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			if seen[n.Content[i].Value] {
				return true
			}
			seen[n.Content[i].Value] = true
		}
	}
	for _, c := range n.Content {
		if duplicateKeys(c) {
			return true
		}
	}
	return false
}

// hugeNumber reports whether n holds, at any depth, a number that a
// float64 cannot hold (1e400), which a scenario's body may not.
func hugeNumber(n *yaml.Node) bool {
	if n.Kind == yaml.ScalarNode && (n.Tag == "!!int" || n.Tag == "!!float") {
		_, err := strconv.ParseFloat(n.Value, 64)
		return err != nil
	}
	return slices.ContainsFunc(n.Content, hugeNumber)
}

func jsonValue(d *json.Decoder) (*yaml.Node, error) {
	tok, err := d.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			n := &yaml.Node{Kind: yaml.MappingNode}
			for d.More() {
				kt, err := d.Token()
				if err != nil {
					return nil, err
				}
				k := kt.(string)
				v, err := jsonValue(d)
				if err != nil {
					return nil, err
				}
				if isSecretName(k) {
					v = redactNode(v)
				}
				n.Content = append(n.Content, str(k), v)
			}
			if _, err := d.Token(); err != nil {
				return nil, err
			}
			if len(n.Content) == 0 {
				n.Style = yaml.FlowStyle
			}
			return n, nil
		case '[':
			n := &yaml.Node{Kind: yaml.SequenceNode}
			for d.More() {
				v, err := jsonValue(d)
				if err != nil {
					return nil, err
				}
				n.Content = append(n.Content, v)
			}
			if _, err := d.Token(); err != nil {
				return nil, err
			}
			if len(n.Content) == 0 {
				n.Style = yaml.FlowStyle
			}
			return n, nil
		}
	case string:
		n := str(t)
		if strings.ContainsAny(t, "\t\r") || strings.HasPrefix(t, "\n") {
			n.Style = yaml.DoubleQuotedStyle // as textBody's strings: no tabs in block scalars
		}
		return n, nil
	case json.Number:
		tag := "!!int"
		if strings.ContainsAny(t.String(), ".eE") {
			tag = "!!float"
		}
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: t.String()}, nil
	case bool:
		if t {
			return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: "true"}, nil
		}
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: "false"}, nil
	case nil:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}, nil
	}
	return nil, fmt.Errorf("unexpected token %v", tok)
}

// redactJSON rewrites a JSON document with its secret-named fields
// redacted, key order kept, for a body file.
func redactJSON(body []byte) ([]byte, error) {
	n, err := jsonNode(body)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	writeJSON(&buf, n)
	return buf.Bytes(), nil
}

func writeJSON(buf *bytes.Buffer, n *yaml.Node) {
	switch n.Kind {
	case yaml.MappingNode:
		buf.WriteByte('{')
		for i := 0; i+1 < len(n.Content); i += 2 {
			if i > 0 {
				buf.WriteByte(',')
			}
			b, _ := json.Marshal(n.Content[i].Value)
			buf.Write(b)
			buf.WriteByte(':')
			writeJSON(buf, n.Content[i+1])
		}
		buf.WriteByte('}')
	case yaml.SequenceNode:
		buf.WriteByte('[')
		for i, e := range n.Content {
			if i > 0 {
				buf.WriteByte(',')
			}
			writeJSON(buf, e)
		}
		buf.WriteByte(']')
	default:
		if n.Tag == "!!str" {
			b, _ := json.Marshal(n.Value)
			buf.Write(b)
		} else {
			buf.WriteString(n.Value)
		}
	}
}
