// Package contentcoding undoes an HTTP answer's Content-Encoding (gzip,
// deflate, br, zstd), bounded, for those that read a body the proxy
// passes through encoded: the recorder (package record), which stores it
// decoded, and an OpenAPI operation checking an upstream's answer
// (openapi.Operation.CheckAnswer). It knows nothing else of HTTP.
package contentcoding
