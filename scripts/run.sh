#!/usr/bin/env bash
# make run: the whole of Weir on this machine — control plane (embedded NATS,
# Postgres from the pg helper, migrations applied), two edges fed over NATS,
# and a pool of two fake provider deployments — with a demo tenant seeded
# through the weir CLI. Ctrl-C stops everything.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
VAR=$ROOT/var/run
mkdir -p "$VAR" var/bin var/log
echo "building…"
(cd controlplane && go build -o ../var/bin/ ./cmd/controlplane ./cmd/weir)
(cd edge && go build -o ../var/bin/ ./cmd/edge ./cmd/fakeprovider)
export PATH=$ROOT/var/bin:$PATH

# Database: DATABASE_URL, else the machine's server or a private one (db/cmd/weir-pg).
if [ -z "${DATABASE_URL:-}" ]; then
  DATABASE_URL=$(cd db && go run ./cmd/weir-pg ensure -db weir_dev)
fi
export DATABASE_URL
# Keys, kept across runs so stored secrets stay readable.
if [ ! -f "$VAR/keys.env" ]; then
  umask 077
  printf 'WEIR_MASTER_KEY=%s\nWEIR_EDGE_KEY=%s\n' "$(head -c32 /dev/urandom | base64)" "$(head -c32 /dev/urandom | base64)" >"$VAR/keys.env"
fi
set -a; . "$VAR/keys.env"; set +a
NATS_PORT=${WEIR_NATS_PORT:-14222}
export WEIR_CONFIG_DIR=$VAR/cli

pids=()
cleanup() {
  trap - EXIT INT TERM
  kill "${pids[@]}" 2>/dev/null || true
  wait 2>/dev/null || true
  echo "stopped"
}
trap cleanup EXIT INT TERM

fakeprovider -addr 127.0.0.1:18081 -control 127.0.0.1:18181 -flavor openai -rpm 600 -itpm 200000 -otpm 50000 >var/log/fake-east.log 2>&1 &
pids+=($!)
fakeprovider -addr 127.0.0.1:18082 -control 127.0.0.1:18182 -flavor openai -rpm 300 -itpm 100000 -otpm 25000 >var/log/fake-west.log 2>&1 &
pids+=($!)

controlplane migrate >/dev/null
if [ ! -s "$VAR/admin.token" ]; then
  controlplane bootstrap-admin --force >"$VAR/admin.token" 2>/dev/null || controlplane bootstrap-admin >"$VAR/admin.token"
fi
TOKEN=$(cat "$VAR/admin.token")
controlplane serve --dev --var-dir "$VAR" --listen 127.0.0.1:7070 --nats-listen "127.0.0.1:$NATS_PORT" >var/log/controlplane.log 2>&1 &
pids+=($!)
for _ in $(seq 1 100); do weir login --url http://127.0.0.1:7070 --token "$TOKEN" >/dev/null 2>&1 && break; sleep 0.2; done
weir login --url http://127.0.0.1:7070 --token "$TOKEN" >/dev/null

# Seed the demo tenant (idempotent: existing objects are kept).
weir tenant show demo >/dev/null 2>&1 || weir tenant create demo >/dev/null
weir login --url http://127.0.0.1:7070 --token "$TOKEN" --tenant demo >/dev/null
printf 'sk-demo-provider-key' | weir secret set demo-provider-key --host 127.0.0.1 >/dev/null
if ! weir provider show demo-pool >/dev/null 2>&1; then
  weir provider pool add demo-pool east --preset openai --base-url http://127.0.0.1:18081/v1 \
    --models gpt-4o-mini --key-secret demo-provider-key --region us-east --weight 2 --account east \
    --price gpt-4o-mini=0.15,0.6,0.075 --rpm 600 --input-tpm 200000 --output-tpm 50000 >/dev/null
  weir provider pool add demo-pool west --base-url http://127.0.0.1:18082/v1 \
    --key-secret demo-provider-key --region us-west --weight 1 --account west --price gpt-4o-mini=0.15,0.6,0.075 \
    --rpm 300 --input-tpm 100000 --output-tpm 25000 >/dev/null 2>&1
fi
if [ ! -s "$VAR/demo.key" ]; then
  weir key revoke demo >/dev/null 2>&1 || true
  weir key create demo >"$VAR/demo.key"
fi
KEY=$(cat "$VAR/demo.key")

for i in 1 2; do
  edge --nats-url "nats://127.0.0.1:$NATS_PORT" --edge-id "edge-$i" --state-dir "$VAR/edge-$i" \
    --listen "127.0.0.1:808$((i-1))" --admin-listen "127.0.0.1:909$((i-1))" >"var/log/edge-$i.log" 2>&1 &
  pids+=($!)
done
for port in 8080 8081; do
  for _ in $(seq 1 100); do curl -fsS "http://127.0.0.1:$port/readyz" >/dev/null 2>&1 && break; sleep 0.1; done
done

CONSOLE="http://127.0.0.1:7070/console/login?next=%2Fconsole%2F%3Ftenant%3Ddemo"
# Open the console's pool health page when a desktop is there to show it.
if [ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ] && command -v xdg-open >/dev/null 2>&1; then
  xdg-open "$CONSOLE" >/dev/null 2>&1 || true
fi

cat <<MSG

Weir is running.
  gateways     http://127.0.0.1:8080 (edge-1)   http://127.0.0.1:8081 (edge-2)
  demo key     $KEY
  admin API    http://127.0.0.1:7070   (weir CLI logged in: export WEIR_CONFIG_DIR=$VAR/cli PATH=$ROOT/var/bin:\$PATH)
  console      $CONSOLE
               sign in with the admin token: $TOKEN
  NATS         nats://127.0.0.1:$NATS_PORT      logs: var/log/

Try:
  curl -si http://127.0.0.1:8080/v1/chat/completions -H 'Authorization: Bearer $KEY' \\
    -H 'Content-Type: application/json' -d '{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}'
  curl -s -X POST http://127.0.0.1:18181/fault -d 429     # member east answers 429 (-d none heals)
  weir provider show demo-pool                             # each edge's view of each member
  weir calls list

Ctrl-C stops everything.
MSG
wait -n "${pids[@]}"
