# syntax=docker/dockerfile:1
# Build: docker build -t scenariomock .
# Run:   docker run --rm -p 8080:8080 -v "$PWD/my-scenarios:/scenarios:ro" scenariomock
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/scenariomock .

# A static binary needs nothing from a base image.
FROM scratch
COPY --from=build /out/scenariomock /scenariomock
# The demo is served until a directory is mounted over /scenarios.
COPY examples/payments-idempotency.yaml /scenarios/payments-idempotency.yaml
USER 65532:65532
ENV SCENARIOMOCK_ADDR=0.0.0.0:8080
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s --start-period=5s --retries=3 CMD ["/scenariomock", "health"]
ENTRYPOINT ["/scenariomock"]
CMD ["serve", "/scenarios"]
