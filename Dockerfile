# Multi-stage build: compile on Debian 12 with the build part of the set-up
# script (compilers and -dev packages only: no PostgreSQL server, no Django, no
# test tools), run on a slim Debian 12 with only the runtime libraries.
# docs/deployment.md describes the image; tests/deploy/deployment_files_test.cpp
# checks what this file promises.
FROM debian:12 AS build
WORKDIR /src
COPY scripts/setup.sh scripts/setup.sh
RUN bash scripts/setup.sh --build-only
COPY . .
# The commit for `dispatcher --version`, `status` and outbox_build_info: the build
# context has no .git (.dockerignore), so pass it: --build-arg OUTBOX_REVISION=$(git rev-parse HEAD).
ARG OUTBOX_REVISION=unknown
RUN cmake -S . -B /build -G Ninja -DCMAKE_BUILD_TYPE=Release -DOUTBOX_BUILD_TESTS=OFF \
 && cmake --build /build -j"$(nproc)" --target dispatcher \
 && strip /build/dispatcher /build/dispatcher-user-data.so

FROM debian:12-slim
ARG OUTBOX_REVISION=unknown
# Where the source lives is the builder's to say (--build-arg OUTBOX_SOURCE_URL=...).
ARG OUTBOX_SOURCE_URL=""
LABEL org.opencontainers.image.title="outbox dispatcher" \
      org.opencontainers.image.version="0.1.0" \
      org.opencontainers.image.revision="$OUTBOX_REVISION" \
      org.opencontainers.image.source="$OUTBOX_SOURCE_URL"
# libicu72, libphonenumber8, libprotobuf32: user data normalization (docs/normalization.md);
# all three only by the user data module (hashing destinations load it).
# The ISO 3166 tables are compiled in: iso-codes is a build dependency only.
# curl: the HEALTHCHECK below. ca-certificates: the system trust store for HTTPS.
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends libpq5 libssl3 ca-certificates curl \
    libicu72 libphonenumber8 libprotobuf32 \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system --gid 10001 dispatcher \
 && useradd --system --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin dispatcher
COPY --from=build /build/dispatcher /usr/local/bin/dispatcher
# Phone numbers and Unicode matching (libphonenumber, ICU's transliterator),
# loaded only when a destination hashes user data (docs/deployment.md).
COPY --from=build /build/dispatcher-user-data.so /usr/local/lib/dispatcher/dispatcher-user-data.so
# Numeric, so Kubernetes can verify runAsNonRoot without reading /etc/passwd
# (a name is refused: "image has non-numeric user ... cannot verify user is non-root").
USER 10001:10001
# Metrics and health on all interfaces inside the container; publish only where needed.
ENV OUTBOX_METRICS_ADDRESS=0.0.0.0:9464
# libpq pulls in GnuTLS (through libldap), whose constructor initializes it in
# every process although nothing here uses it: 0.5 MB of peak RSS (docs/deployment.md).
# libldap initializes GnuTLS itself if an LDAP lookup ever needs TLS.
ENV GNUTLS_NO_IMPLICIT_INIT=1
EXPOSE 9464
STOPSIGNAL SIGTERM
# /healthz is served once the start-up database check is over, and `run --migrate`
# may first wait: connect (up to 10 s), another replica's migration lock (up to
# 60 s), then each migration statement (up to 60 s each). Failures during the
# 5 minute start period do not count; the first success ends it.
HEALTHCHECK --interval=15s --timeout=3s --start-period=300s --retries=3 \
  CMD curl -fsS http://127.0.0.1:9464/healthz || exit 1
ENTRYPOINT ["/usr/local/bin/dispatcher"]
CMD ["run", "--migrate"]
