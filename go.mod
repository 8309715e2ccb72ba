module github.com/scenariomock/scenariomock

go 1.26.0

require (
	github.com/andybalholm/brotli v1.3.0 // only internal/contentcoding imports it: br answers are stored (record/) and checked (openapi/) decoded
	github.com/chromedp/chromedp v0.23.1 // test-only: internal/browsertest and the dashboard's browser tests drive Chromium
	github.com/fsnotify/fsnotify v1.10.1
	github.com/gorilla/mux v1.8.1
	github.com/klauspost/compress v1.20.4 // only internal/contentcoding imports it (zstd): zstd answers are stored (record/) and checked (openapi/) decoded
	github.com/redis/go-redis/v9 v9.23.0 // the shared state store (--state redis://)
	github.com/santhosh-tekuri/jsonschema/v6 v6.0.3 // only the schema tests (scenarios/schema_test.go) import it
	github.com/spf13/cobra v1.10.2
	github.com/spf13/pflag v1.0.9
	github.com/stripe/stripe-go/v85 v85.0.0 // test-only: examples/stripe_test.go, and the webhooks and server tests verify signatures with its webhook package
	gopkg.in/yaml.v3 v3.0.1
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/chromedp/cdproto v0.160.1 // indirect
	github.com/go-json-experiment/json v0.0.0-20260213210345-44df1a37e875 // indirect
	github.com/inconshreveable/mousetrap v1.1.0 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/sys v0.49.0
	golang.org/x/text v0.43.0 // indirect
)

require (
	github.com/pb33f/go-yaml v0.1.1
	github.com/pb33f/jsonschema/v6 v6.0.3 // libopenapi-validator's JSON Schema validator: openapi/alternatives.go reads its detailed output
	github.com/pb33f/libopenapi v0.43.1
	github.com/pb33f/libopenapi-validator v0.16.3
	github.com/stripe/stripe-mock v0.203.0
)

require (
	github.com/bahlo/generic-list-go v0.2.0 // indirect
	github.com/basgys/goxml2json v1.1.1-0.20231018121955-e66ee54ceaad // indirect
	github.com/buger/jsonparser v1.6.1 // indirect
	github.com/go-openapi/jsonpointer v1.0.2 // indirect
	github.com/pb33f/jsonpath v0.8.5 // indirect
	github.com/pb33f/ordered-map/v2 v2.3.2 // indirect
	golang.org/x/net v0.62.0 // test-only: the HTTP/2 rapid-reset test (server/rapidreset_test.go) writes frames with its http2.Framer
	golang.org/x/sync v0.25.0 // indirect
)
