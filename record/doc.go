// Package record turns exchanges seen by a recording proxy into scenario
// files a person would have written, and writes them only when they carry
// none of the credentials seen in the traffic.
//
// It owns the shape of a recording: one route per method, path template
// (numeric and id-like segments become {id}, {id2}, ...) and query (its
// parameters as when: query: conditions; a 206 or 416 answer is to its
// request's Range only, a when: headers: Range: condition, and to its
// If-Range too when it sent one), repeated calls as
// a responses: sequence in the order they were seen, JSON bodies as YAML
// mappings with their key order, text bodies as strings, binary and large
// bodies as bodyFile:s beside the scenario file, the upstream's latency as
// delay: when asked, and the upstream's absolute URLs rewritten to the
// mock's address. Compressed answers (gzip, deflate, br, zstd) are stored
// decoded, their Content-Encoding dropped, so that the files stay editable
// and the mock serves them as plain bodies.
//
// Secret-safe by default: request headers are not written unless listed
// (Options.Headers, and then only in a comment above each response);
// Authorization, cookies, and header, query and JSON field names that look
// like credentials (token, secret, password, key, card, cvc, ...) are
// redacted; and Render refuses to produce files that contain any credential
// value seen in the traffic, whatever field it hid in.
//
// It knows no HTTP serving and no proxying: the server's commit stage hands
// it each proxied exchange (Recorder.Add, with Capture to tee a streaming
// body), and the record command calls Recorder.Write when it stops. It
// decodes bodies with internal/contentcoding, which, with package openapi
// (an upstream's answer is checked decoded), links the brotli and zstd
// decoders.
package record
