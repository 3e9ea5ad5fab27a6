#!/usr/bin/env bash
# make run: the whole of Weir on this machine — control plane (embedded NATS,
# Postgres from the pg helper, migrations applied), two edges fed over NATS,
# a pool of two fake OpenAI deployments on distinct loopback hosts (east on
# 127.0.0.1, west on 127.0.0.2), each with a key of its own, and a mixed pool
# of a fake Anthropic deployment (127.0.0.3, order 1) and a fake Gemini API
# deployment (127.0.0.4, order 2) — with a demo tenant seeded through the
# weir CLI.
#
# Every process is checked ready (its own log says it listens, and it
# answers) before the banner. When one fails to start, or exits later, the
# script names it, shows the end of its log, stops the others and exits 1.
# Ctrl-C or SIGTERM stops everything and exits 0. Logs are in var/log/.
#
# Environment: DATABASE_URL (else weir-pg finds or starts a local
# PostgreSQL, database weir_dev); WEIR_NATS_PORT (the embedded NATS port;
# default 14222, or a free port when 14222 is in use); WEIR_LOG_FORMAT
# (default text here) and WEIR_LOG_LEVEL.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
VAR=$ROOT/var/run
LOG=$ROOT/var/log
mkdir -p "$VAR" var/bin "$LOG"
# Logs for a person at a terminal: text (key=value), not production's JSON;
# WEIR_LOG_LEVEL=debug also logs every attempt of every call.
export WEIR_LOG_FORMAT="${WEIR_LOG_FORMAT:-text}"

# shellcheck source=scripts/procs.sh
. scripts/procs.sh
procs_traps "make run"

# --- build -----------------------------------------------------------------

say "building into var/bin (a first build compiles every dependency and takes a few minutes):"
say "  controlplane, weir  (controlplane/cmd)"
(cd controlplane && go build -o ../var/bin/ ./cmd/controlplane ./cmd/weir)
say "  edge, fakeprovider  (edge/cmd)"
(cd edge && go build -o ../var/bin/ ./cmd/edge ./cmd/fakeprovider)
say "  weir-pg             (db/cmd)"
(cd db && go build -o ../var/bin/ ./cmd/weir-pg)
export PATH=$ROOT/var/bin:$PATH

# --- database, keys, ports -------------------------------------------------

if [ -z "${DATABASE_URL:-}" ]; then
	say "database: finding or starting a local PostgreSQL (weir-pg), database weir_dev…"
	DATABASE_URL=$(weir-pg ensure -db weir_dev) || die "weir-pg could not find or start PostgreSQL (see above)"
fi
export DATABASE_URL
# Keys, kept across runs so stored secrets stay readable.
if [ ! -f "$VAR/keys.env" ]; then
	(
		umask 077
		printf 'WEIR_MASTER_KEY=%s\nWEIR_EDGE_KEY=%s\n' "$(head -c32 /dev/urandom | base64)" "$(head -c32 /dev/urandom | base64)" >"$VAR/keys.env"
	)
fi
# The config signing key (an Ed25519 seed) signs snapshots and commands; the
# edges verify them with its public key (keys.env of an older run lacks it).
if ! grep -q '^WEIR_CONFIG_SIGNING_KEY=' "$VAR/keys.env"; then
	(umask 077 && printf 'WEIR_CONFIG_SIGNING_KEY=%s\n' "$(head -c32 /dev/urandom | base64)" >>"$VAR/keys.env")
fi
set -a
. "$VAR/keys.env"
set +a
WEIR_CONFIG_PUBLIC_KEY=$(controlplane config-public-key) || die "controlplane config-public-key failed (see above)"
export WEIR_CONFIG_PUBLIC_KEY
export WEIR_CONFIG_DIR=$VAR/cli
unset NATS_URL # the control plane embeds its own NATS server

NATS_PORT=${WEIR_NATS_PORT:-14222}
if [ -z "${WEIR_NATS_PORT:-}" ] && in_use 127.0.0.1 "$NATS_PORT"; then
	say "NATS: port $NATS_PORT is in use, so the embedded server takes a free port"
	NATS_PORT=0
fi

# --- processes -------------------------------------------------------------

say "starting the fake deployments, the control plane and two edges…"
start fake-east "$LOG/fake-east.log" env FAKEPROVIDER_API_KEY=sk-demo-east \
	fakeprovider -addr 127.0.0.1:18081 -control 127.0.0.1:18181 -flavor openai -rpm 600 -itpm 200000 -otpm 50000
start fake-west "$LOG/fake-west.log" env FAKEPROVIDER_API_KEY=sk-demo-west \
	fakeprovider -addr 127.0.0.2:18082 -control 127.0.0.2:18182 -flavor openai -rpm 300 -itpm 100000 -otpm 25000
start fake-claude "$LOG/fake-claude.log" env FAKEPROVIDER_API_KEY=sk-demo-claude \
	fakeprovider -addr 127.0.0.3:18083 -control 127.0.0.3:18183 -flavor anthropic -rpm 120
start fake-gemini "$LOG/fake-gemini.log" env FAKEPROVIDER_API_KEY=demo-gemini-key \
	fakeprovider -addr 127.0.0.4:18084 -control 127.0.0.4:18184 -flavor gemini -rpm 600
for f in fake-east fake-west fake-claude fake-gemini; do
	ready "$f" 30 logged "$f" "control on"
done

if ! controlplane migrate >/dev/null 2>"$LOG/migrate.log"; then
	cat "$LOG/migrate.log" >&2
	if grep -q "does not decrypt" "$LOG/migrate.log"; then
		die "the database ${DATABASE_URL%%\?*} holds secrets sealed under another master key than $VAR/keys.env (a database made by another checkout?); drop it (dropdb weir_dev) or restore that keys.env"
	fi
	die "controlplane migrate failed (see above)"
fi
if [ ! -s "$VAR/admin.token" ]; then
	controlplane bootstrap-admin --force >"$VAR/admin.token" 2>/dev/null || controlplane bootstrap-admin >"$VAR/admin.token"
fi
TOKEN=$(cat "$VAR/admin.token")
start controlplane "$LOG/controlplane.log" \
	controlplane serve --dev --var-dir "$VAR" --listen 127.0.0.1:7070 --nats-listen "127.0.0.1:$NATS_PORT"
ready controlplane 60 logged controlplane "admin API listening"
ready controlplane 30 weir login --url http://127.0.0.1:7070 --token "$TOKEN"
nats_url=$(sed -n 's/.*embedded NATS server started.* url=\(nats:[^ ]*\).*/\1/p' "${logf[controlplane]}" | tail -n 1)
[ -n "$nats_url" ] || failed controlplane "did not say where its embedded NATS server listens"

# Seed the demo tenant. Idempotent, and it brings an older demo up to date:
# each member signs with a key of its own, bound to its own host.
say "seeding tenant demo…"
weir tenant show demo >/dev/null 2>&1 || weir tenant create demo >/dev/null
weir login --url http://127.0.0.1:7070 --token "$TOKEN" --tenant demo >/dev/null
printf 'sk-demo-east' | weir secret set demo-east-key --host 127.0.0.1 >/dev/null
printf 'sk-demo-west' | weir secret set demo-west-key --host 127.0.0.2 >/dev/null
east=(--base-url http://127.0.0.1:18081/v1 --key-secret demo-east-key --region us-east --weight 2 --account east
	--price gpt-4o-mini=0.15,0.6,0.075 --rpm 600 --input-tpm 200000 --output-tpm 50000)
west=(--base-url http://127.0.0.2:18082/v1 --key-secret demo-west-key --region us-west --weight 1 --account west
	--price gpt-4o-mini=0.15,0.6,0.075 --rpm 300 --input-tpm 100000 --output-tpm 25000)
if weir provider show demo-pool >/dev/null 2>&1; then
	weir provider pool set demo-pool east "${east[@]}" >/dev/null
	weir provider pool set demo-pool west "${west[@]}" >/dev/null
else
	weir provider pool add demo-pool east --preset openai --models gpt-4o-mini "${east[@]}" >/dev/null
	weir provider pool add demo-pool west "${west[@]}" >/dev/null
fi
# The mixed pool (ROUTING §11): one caller model, claude-demo, served by an
# Anthropic member in order 1 and by a Gemini member in order 2 when the
# first is cooling; OpenAI and Anthropic callers reach both.
printf 'sk-demo-claude' | weir secret set demo-claude-key --host 127.0.0.3 >/dev/null
printf 'demo-gemini-key' | weir secret set demo-gemini-key --host 127.0.0.4 >/dev/null
claude=(--base-url http://127.0.0.3:18083 --key-secret demo-claude-key --order 1 --region us-east
	--price claude-demo=3,15,0.3,3.75 --rpm 120)
gemini=(--base-url http://127.0.0.4:18084/v1beta --key-secret demo-gemini-key --order 2 --region us-east
	--model claude-demo=gemini-2.5-flash --price claude-demo=0.3,2.5,0.075 --rpm 600 --rpd 10000)
if weir provider show demo-mixed >/dev/null 2>&1; then
	weir provider pool set demo-mixed claude "${claude[@]}" >/dev/null
	weir provider pool set demo-mixed gemini --preset gemini "${gemini[@]}" >/dev/null
else
	weir provider pool add demo-mixed claude --preset anthropic --models claude-demo --day-zone America/Los_Angeles "${claude[@]}" >/dev/null
	weir provider pool add demo-mixed gemini --preset gemini "${gemini[@]}" >/dev/null
fi
weir secret delete demo-provider-key >/dev/null 2>&1 || true # the older demo's shared key
if [ ! -s "$VAR/demo.key" ]; then
	weir key revoke demo >/dev/null 2>&1 || true
	weir key create demo >"$VAR/demo.key"
fi
KEY=$(cat "$VAR/demo.key")

# The embedded NATS server has the production users and permissions: each
# edge signs in as its edge id with the password the control plane generated
# under var/run/nats-auth/. Plain text on loopback, said explicitly.
for i in 1 2; do
	start "edge-$i" "$LOG/edge-$i.log" env NATS_USER="edge-$i" NATS_PASSWORD="$(cat "$VAR/nats-auth/edge-edge-$i.password")" \
		edge --nats-url "$nats_url" --nats-insecure --edge-id "edge-$i" --state-dir "$VAR/edge-$i" \
		--listen "127.0.0.1:808$((i - 1))" --admin-listen "127.0.0.1:909$((i - 1))"
done
for i in 1 2; do
	ready "edge-$i" 60 logged "edge-$i" "edge listening"
	ready "edge-$i" 60 curl -fsS "http://127.0.0.1:808$((i - 1))/readyz"
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
  pool         demo-pool: east http://127.0.0.1:18081 (weight 2)   west http://127.0.0.2:18082 (weight 1)
  mixed pool   demo-mixed (model claude-demo): Anthropic http://127.0.0.3:18083 (order 1)   Gemini http://127.0.0.4:18084 (order 2)
  admin API    http://127.0.0.1:7070   (weir CLI logged in: export WEIR_CONFIG_DIR=$VAR/cli PATH=$ROOT/var/bin:\$PATH)
  console      $CONSOLE
               sign in with the admin token: $TOKEN
  NATS         $nats_url      logs: var/log/

Try:
  curl -si http://127.0.0.1:8080/v1/chat/completions -H 'Authorization: Bearer $KEY' \\
    -H 'Content-Type: application/json' -d '{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}'
  curl -s -X POST http://127.0.0.1:18181/fault -d 429:60s   # east answers 429, retry after 60 s (-d none heals)
  curl -s -X POST http://127.0.0.2:18182/fault -d 429:60s   # west too: calls get 429 weir_pool_cooling
  weir provider show demo-pool                             # each edge's view of each member
  curl -s http://127.0.0.1:8080/v1/chat/completions -H 'Authorization: Bearer $KEY' \\
    -d '{"model":"claude-demo","messages":[{"role":"user","content":"hi"}]}'   # OpenAI format, Anthropic member
  curl -s -X POST http://127.0.0.3:18183/fault -d 429:60s   # the Anthropic member cools: the same call goes to Gemini
  weir calls list; weir calls show CALL_ID                 # the member that served; its format, "translated"

Ctrl-C stops everything.
MSG

serve_until_signal
