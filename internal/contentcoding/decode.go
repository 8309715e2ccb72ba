package contentcoding

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"fmt"
	"io"
	"strings"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/zstd"
)

// Decode undoes the Content-Encoding list enc (applied in the order
// listed, so undone from the last) and returns at most limit decoded bytes;
// more is an error, so that a small compressed body cannot expand without
// bound. It is safe for concurrent use.
func Decode(enc string, body []byte, limit int) ([]byte, error) {
	codings := strings.Split(enc, ",")
	for i := len(codings) - 1; i >= 0; i-- {
		c := strings.ToLower(strings.TrimSpace(codings[i]))
		var r io.Reader
		var closer func()
		switch c {
		case "", "identity":
			continue
		case "gzip", "x-gzip":
			zr, err := gzip.NewReader(bytes.NewReader(body))
			if err != nil {
				return nil, fmt.Errorf("gzip: %w", err)
			}
			r = zr
		case "deflate":
			// RFC 9110 says zlib-wrapped; some servers send raw deflate.
			if zr, err := zlib.NewReader(bytes.NewReader(body)); err == nil {
				r = zr
			} else {
				r = flate.NewReader(bytes.NewReader(body))
			}
		case "br":
			r = brotli.NewReader(bytes.NewReader(body))
		case "zstd":
			zr, err := zstd.NewReader(bytes.NewReader(body), zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(uint64(limit)+1<<20))
			if err != nil {
				return nil, fmt.Errorf("zstd: %w", err)
			}
			r, closer = zr, zr.Close
		default:
			return nil, fmt.Errorf("content coding %q is not supported (gzip, deflate, br, zstd are)", c)
		}
		out, err := io.ReadAll(io.LimitReader(r, int64(limit)+1))
		if closer != nil {
			closer()
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c, err)
		}
		if len(out) > limit {
			return nil, fmt.Errorf("%s: decodes to more than %d bytes", c, limit)
		}
		body = out
	}
	return body, nil
}
