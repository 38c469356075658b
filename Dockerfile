# syntax=docker/dockerfile:1
# waitroom: a static binary on a distroless, non-root base.
#   docker build -t waitroom .
#   docker run -p 8080:8080 waitroom          # embedded mode, zero setup
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# Pure Go throughout (SQLite is modernc.org/sqlite), so CGO off gives a static binary.
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/waitroom ./cmd/waitroom \
 && mkdir -p /out/data

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/waitroom /usr/local/bin/waitroom
# The embedded mode's SQLite file; owned by the nonroot user (65532).
COPY --from=build --chown=65532:65532 /out/data /data
ENV WAITROOM_ADDR=:8080 \
    WAITROOM_DATA_DIR=/data
USER 65532:65532
EXPOSE 8080
VOLUME ["/data"]
ENTRYPOINT ["/usr/local/bin/waitroom"]
CMD ["serve"]
