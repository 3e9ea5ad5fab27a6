#!/usr/bin/env bash
# make run-standalone: two fake provider deployments and one edge serving
# examples/standalone.json, no control plane. Every process is checked ready
# before the banner; when one fails to start, or exits later, the script
# names it, shows the end of its log, stops the others and exits 1. Ctrl-C
# or SIGTERM stops everything and exits 0. Logs are in var/log/.
#
# Environment: DEMO_PROVIDER_KEY (the fake deployments' key; default
# sk-demo-provider-key), WEIR_EDGE_LISTEN (default 127.0.0.1:8080),
# WEIR_LOG_FORMAT (default text here) and WEIR_LOG_LEVEL.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p var/bin var/log
# Logs for a person at a terminal: text (key=value), not production's JSON;
# WEIR_LOG_LEVEL=debug also logs every attempt of every call.
export WEIR_LOG_FORMAT="${WEIR_LOG_FORMAT:-text}"

# shellcheck source=scripts/procs.sh
. scripts/procs.sh
procs_traps "make run-standalone"

say "building edge and fakeprovider (edge/cmd) into var/bin (a first build compiles every dependency and takes a few minutes)…"
(cd edge && go build -o ../var/bin/ ./cmd/edge ./cmd/fakeprovider)

export DEMO_PROVIDER_KEY="${DEMO_PROVIDER_KEY:-sk-demo-provider-key}"
GATEWAY="${WEIR_EDGE_LISTEN:-127.0.0.1:8080}"

say "starting the fake deployments and the edge…"
start fake-east var/log/fake-east.log env FAKEPROVIDER_API_KEY="$DEMO_PROVIDER_KEY" \
	var/bin/fakeprovider -addr 127.0.0.1:18081 -control 127.0.0.1:18181 -flavor openai -rpm 600 -itpm 200000 -otpm 50000
start fake-west var/log/fake-west.log env FAKEPROVIDER_API_KEY="$DEMO_PROVIDER_KEY" \
	var/bin/fakeprovider -addr 127.0.0.1:18082 -control 127.0.0.1:18182 -flavor openai -rpm 300 -itpm 100000 -otpm 25000
ready fake-east 30 logged fake-east "control on"
ready fake-west 30 logged fake-west "control on"
start edge var/log/edge.log \
	var/bin/edge --config examples/standalone.json --listen "$GATEWAY" --admin-listen 127.0.0.1:9090 --usage-log var/log/usage.jsonl
ready edge 60 logged edge "edge listening"
ready edge 60 curl -fsS "http://$GATEWAY/readyz"

cat <<MSG

Weir is running (standalone).
  gateway   http://$GATEWAY          key: weir-demo-key
  metrics   http://127.0.0.1:9090/metrics
  members   east http://127.0.0.1:18081 (weight 2)   west http://127.0.0.1:18082 (weight 1)
  logs      var/log/ (call records in var/log/usage.jsonl)

Try:
  curl -si http://$GATEWAY/v1/chat/completions -H 'Authorization: Bearer weir-demo-key' \\
    -H 'Content-Type: application/json' -d '{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}'

Force member east to answer 429 for a minute, then call again and watch x-weir-member:
  curl -s -X POST http://127.0.0.1:18181/fault -d 429:60s   # and -d none to heal it

Ctrl-C stops everything.
MSG
serve_until_signal
