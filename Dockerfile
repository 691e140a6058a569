# The switchboard server as a container image. `Dockerfile` is a copy of this file (Docker's
# BuildKit does not follow a symlinked Dockerfile); a test keeps the two identical.
#
#   podman build --format docker -t switchboard .      (docker build -t switchboard .)
#
# Configured by environment only (README, Deploy). It never runs the embedded PostgreSQL: give it
# DATABASE_URL (compose.yaml starts one beside it). Its data directory is the volume
# /var/lib/switchboard.

# Any image with Node 20.19+ and npm; CI, which reaches no registry, passes one built from
# Debian's packages.
ARG BASE_IMAGE=node:20-bookworm-slim

FROM ${BASE_IMAGE} AS build
WORKDIR /app
# The dependencies first, so that a change to the code alone reuses this layer. Their install
# scripts do not run: the only one the build needs is patch-package's, run by hand.
COPY package.json package-lock.json ./
COPY patches/ patches/
RUN npm ci --ignore-scripts --no-audit --no-fund && npx patch-package
COPY . .
# Then only what runs: no development dependencies, and no optional ones, which here are only the
# embedded PostgreSQL's binaries (60 MB this image must never use).
RUN npm run build && npm prune --omit=dev --omit=optional --no-audit --no-fund

FROM ${BASE_IMAGE}
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=3000 \
    SWITCHBOARD_EMBEDDED_POSTGRES=off \
    HOME=/var/lib/switchboard \
    SWITCHBOARD_DATA_DIR=/var/lib/switchboard/data
# A user of its own, whose home is the volume: the data directory and the CLI's credentials file
# (the first start's admin token, for `exec … switchboard …`) outlive the container.
RUN groupadd --system --gid 10001 switchboard \
    && useradd --system --uid 10001 --gid switchboard --home-dir /var/lib/switchboard \
       --shell /usr/sbin/nologin switchboard \
    && install -d -o switchboard -g switchboard -m 0700 /var/lib/switchboard
WORKDIR /app
# What the npm package ships (package.json "files"), owned by root: the server cannot change
# its own code.
COPY --from=build /app/package.json /app/oclif.manifest.json /app/app.yml ./
COPY --from=build /app/bin/ bin/
COPY --from=build /app/dist/ dist/
COPY --from=build /app/migrations/ migrations/
COPY --from=build /app/src/surfaces/console/assets/ src/surfaces/console/assets/
COPY --from=build /app/node_modules/ node_modules/
RUN ln -s /app/bin/run.js /usr/local/bin/switchboard
USER 10001:10001
VOLUME /var/lib/switchboard
EXPOSE 3000
# Neither base image has curl; Node's fetch asks the server itself, on the port it listens on.
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch(`http://127.0.0.1:${process.env.PORT || 3000}/healthz`).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
ENTRYPOINT ["switchboard"]
CMD ["up"]
