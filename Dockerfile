# Multi-stage build: compile on Debian 12 with the same set-up script the README
# uses, run on a slim Debian 12 with only the runtime libraries.
FROM debian:12 AS build
WORKDIR /src
COPY scripts/setup.sh scripts/setup.sh
RUN bash scripts/setup.sh
COPY . .
RUN cmake -S . -B /build -G Ninja -DCMAKE_BUILD_TYPE=Release -DOUTBOX_BUILD_TESTS=OFF \
 && cmake --build /build -j"$(nproc)" --target dispatcher \
 && strip /build/dispatcher

FROM debian:12-slim
# libicu72, libphonenumber8, libprotobuf32: user data normalization (docs/normalization.md).
# The ISO 3166 tables are compiled in: iso-codes is a build dependency only.
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends libpq5 libssl3 ca-certificates curl \
    libicu72 libphonenumber8 libprotobuf32 \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --no-create-home --shell /usr/sbin/nologin dispatcher
COPY --from=build /build/dispatcher /usr/local/bin/dispatcher
USER dispatcher
# Metrics and health on all interfaces inside the container; publish only where needed.
ENV OUTBOX_METRICS_ADDRESS=0.0.0.0:9464
EXPOSE 9464
STOPSIGNAL SIGTERM
HEALTHCHECK --interval=15s --timeout=3s --start-period=10s --retries=3 \
  CMD curl -fsS http://127.0.0.1:9464/healthz || exit 1
ENTRYPOINT ["/usr/local/bin/dispatcher"]
CMD ["run", "--migrate"]
