module github.com/scenariomock/scenariomock/examples/webhooks

go 1.26

require github.com/stripe/stripe-go/v85 v85.0.0
