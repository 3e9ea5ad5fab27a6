#!/usr/bin/env bash
# Runs Weir standalone on this machine: two fake provider deployments and one
# edge serving examples/standalone.json. Ctrl-C stops everything.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p var/bin var/log
echo "building…"
(cd edge && go build -o ../var/bin/ ./cmd/edge ./cmd/fakeprovider)

export DEMO_PROVIDER_KEY="${DEMO_PROVIDER_KEY:-sk-demo-provider-key}"
GATEWAY="${WEIR_EDGE_LISTEN:-127.0.0.1:8080}"
pids=()
cleanup() {
  trap - EXIT INT TERM
  kill "${pids[@]}" 2>/dev/null || true
  wait 2>/dev/null || true
  echo "stopped"
}
trap cleanup EXIT INT TERM

var/bin/fakeprovider -addr 127.0.0.1:18081 -control 127.0.0.1:18181 -flavor openai -rpm 600 -itpm 200000 -otpm 50000 >var/log/fake-east.log 2>&1 &
pids+=($!)
var/bin/fakeprovider -addr 127.0.0.1:18082 -control 127.0.0.1:18182 -flavor openai -rpm 300 -itpm 100000 -otpm 25000 >var/log/fake-west.log 2>&1 &
pids+=($!)
var/bin/edge --config examples/standalone.json --listen "$GATEWAY" --admin-listen 127.0.0.1:9090 \
  --usage-log var/log/usage.jsonl >var/log/edge.log 2>&1 &
pids+=($!)

for _ in $(seq 1 100); do
  curl -fsS "http://$GATEWAY/readyz" >/dev/null 2>&1 && break
  sleep 0.1
done
curl -fsS "http://$GATEWAY/readyz" >/dev/null || { echo "edge did not start; see var/log/edge.log"; cat var/log/edge.log; exit 1; }

cat <<MSG

Weir is running (standalone).
  gateway   http://$GATEWAY          key: weir-demo-key
  metrics   http://127.0.0.1:9090/metrics
  members   east http://127.0.0.1:18081 (weight 2)   west http://127.0.0.1:18082 (weight 1)
  logs      var/log/ (call records in var/log/usage.jsonl)

Try:
  curl -si http://$GATEWAY/v1/chat/completions -H 'Authorization: Bearer weir-demo-key' \\
    -H 'Content-Type: application/json' -d '{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}'

Force member east to answer 429, then call again and watch x-weir-member:
  curl -s -X POST http://127.0.0.1:18181/fault -d 429     # and -d none to heal it

Ctrl-C stops everything.
MSG
wait -n "${pids[@]}"
