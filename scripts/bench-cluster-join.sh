#!/usr/bin/env bash
# Join latency on one node vs three nodes (Redis routing), same PostgreSQL, same run.
# Starts its own redis-server and a throwaway PostgreSQL cluster under a temp dir, a single
# callroomd on one database and three callroomd nodes on another, and runs
# `callroom bench join` against the single node and against node B of the cluster (each join a
# new room, placed by the registry on any of the three nodes: the rooms per node are printed).
# Usage: scripts/bench-cluster-join.sh [JOINS] [ROUNDS]   (release binaries: swift build -c release)
set -euo pipefail
joins=${1:-100}
rounds=${2:-2}
bin=$(swift build -c release --show-bin-path)
for b in callroomd callroom callroom-bench; do
  [ -x "$bin/$b" ] || { echo "bench-cluster-join: build first: swift build -c release --product $b" >&2; exit 2; }
done
command -v redis-server >/dev/null || { echo "bench-cluster-join: redis-server missing: scripts/install-deps.sh" >&2; exit 2; }
pgbin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[ -n "$pgbin" ] || { echo "bench-cluster-join: PostgreSQL missing: scripts/install-deps.sh" >&2; exit 2; }

tmp=$(mktemp -d /tmp/callroom-cluster-bench.XXXXXX)
chmod 755 "$tmp"
cleanup() {
  # (start runs in $(…), a subshell: the nodes' pids are in a file, not a variable.)
  [ -f "$tmp/pids" ] && while read -r p; do kill "$p" 2>/dev/null || true; done < "$tmp/pids"
  wait 2>/dev/null || true
  [ -f "$tmp/redis.pid" ] && kill "$(cat "$tmp/redis.pid")" 2>/dev/null || true
  runas "$pgbin/pg_ctl" -D "$tmp/pg" -m immediate stop >/dev/null 2>&1 || true
  rm -rf "$tmp"
}
runas() { if [ "$(id -u)" = 0 ]; then su postgres -s /bin/sh -c "$(printf '%q ' "$@")"; else "$@"; fi; }
trap cleanup EXIT
# (A closed output pipe or a signal kills bash without its EXIT trap: stop the nodes then too.)
trap 'cleanup; trap - EXIT; exit 1' INT TERM PIPE

redis-server --port 0 --unixsocket "$tmp/redis.sock" --save '' --appendonly no --daemonize yes --pidfile "$tmp/redis.pid" >/dev/null
[ "$(id -u)" = 0 ] && chown postgres "$tmp"
runas "$pgbin/initdb" -D "$tmp/pg" -U postgres -A trust >/dev/null
runas "$pgbin/pg_ctl" -D "$tmp/pg" -o "-k $tmp -c listen_addresses= -p 5432" -l "$tmp/pg.log" -w start >/dev/null
for db in single cluster; do runas "$pgbin/createdb" -h "$tmp" -p 5432 -U postgres "$db"; done
for i in $(seq 50); do [ -S "$tmp/redis.sock" ] && break; sleep 0.1; done

# start NAME ARGS…: a callroomd; prints its URL once it listens.
start() {
  local name=$1; shift
  mkdir -p -m 700 "$tmp/$name"
  [ "$name" != single ] && [ "$name" != node-a ] && cp "$tmp/node-a/keys.json" "$tmp/$name/"
  "$bin/callroomd" --listen 127.0.0.1:0 --data-dir "$tmp/$name" --log-level info "$@" >"$tmp/$name.out" 2>"$tmp/$name.err" &
  echo $! >> "$tmp/pids"
  for i in $(seq 100); do grep -q "listening on" "$tmp/$name.out" 2>/dev/null && break; sleep 0.1; done
  grep "listening on" "$tmp/$name.out" | awk '{print $4}'
}
single=$(start single --database "host=$tmp port=5432 user=postgres dbname=single")
for n in node-a node-b node-c; do
  url=$(start "$n" --database "host=$tmp port=5432 user=postgres dbname=cluster" --redis "unix://$tmp/redis.sock" --node-id "$n")
  eval "url_${n//-/_}=\$url"
done
key_single=$(awk '/authKey/ {print $NF}' "$tmp/single.out")
key_cluster=$(awk '/authKey/ {print $NF}' "$tmp/node-a.out")
sleep 1.5  # every node registered

echo "callroom bench join: $joins joins a round, $rounds rounds, alternating (release, PostgreSQL 15, redis-server $(redis-server --version | awk '{print $3}'))"
for r in $(seq "$rounds"); do
  echo "--- round $r: one node"
  "$bin/callroom" bench join --server "$single" --auth-key "$key_single" --joins "$joins"
  echo "--- round $r: three nodes, joins through node B"
  "$bin/callroom" bench join --server "$url_node_b" --auth-key "$key_cluster" --joins "$joins"
done
echo "--- where the cluster's rooms were placed (participants joined per node):"
for n in node-a node-b node-c; do echo "$n: $(grep -c 'participant joined' "$tmp/$n.err" || true)"; done
echo "--- Redis commands, whole run:"
redis-cli -s "$tmp/redis.sock" info commandstats | grep -E "cmdstat_(evalsha|eval|publish|get|set|mget|smembers|sadd):" | sed 's/,usec_per_call.*//'
