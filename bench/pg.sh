#!/usr/bin/env bash
# A throwaway PostgreSQL for bench/sessions.py, started the way .ci/run starts CI's: Debian's
# server binaries, initdb into a temp dir as the postgres user, loopback only.
#
#   bench/pg.sh          start it (installs Debian's postgresql package if missing), print the URL
#   bench/pg.sh url      print the URL of the running server
#   bench/pg.sh stop     stop it and delete its data directory
#
# Run as root (initdb/pg_ctl run as the postgres user through runuser). The role it creates
# may CREATE DATABASE, which is what the benchmark needs. Durability settings are PostgreSQL's
# defaults (fsync and synchronous_commit on), so append latency includes a real commit;
# BENCH_PG_FAST=1 turns them off like CI does. Knobs: BENCH_PG_PORT (55433), BENCH_PG_DIR.
set -euo pipefail

PORT=${BENCH_PG_PORT:-55433}
DIR=${BENCH_PG_DIR:-/tmp/memoryhub-bench-pg}
ROLE=memoryhub_bench
DATA=$DIR/data
URL_FILE=$DIR/url

die() {
    echo "pg.sh: error: $*" >&2
    exit 1
}

as_postgres() {
    # cd / first: postgres cannot read the clone's directory, and its tools complain.
    (cd / && runuser -u postgres -- "$@")
}

pg_bin() {
    local bin
    bin=$(printf '%s\n' /usr/lib/postgresql/*/bin | sort -V | tail -n 1) # newest major
    [[ -x $bin/initdb ]] && echo "$bin"
}

port_in_use() {
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

running() {
    local bin
    bin=$(pg_bin) || return 1
    [[ -f $DATA/postmaster.pid ]] && as_postgres "$bin/pg_ctl" -D "$DATA" status >/dev/null 2>&1
}

print_url() {
    [[ -s $URL_FILE ]] || die "no server started by pg.sh in $DIR"
    cat "$URL_FILE"
}

start() {
    [[ $(id -u) == 0 ]] || die "run as root (initdb and pg_ctl run as the postgres user)"
    if running; then
        echo "Already running in $DIR." >&2
        announce
        return 0
    fi
    local bin
    if ! bin=$(pg_bin); then
        echo "Installing Debian's postgresql package (as .ci/run does)..." >&2
        DEBIAN_FRONTEND=noninteractive apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
            postgresql >/dev/null
        bin=$(pg_bin) || die "no PostgreSQL server under /usr/lib/postgresql after installing"
    fi
    port_in_use "$PORT" && die "port $PORT is already in use (set BENCH_PG_PORT)"
    [[ -e $DIR ]] && die "$DIR exists but no server runs there; remove it or run: $0 stop"

    local password fast=()
    password=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
    if [[ ${BENCH_PG_FAST:-0} == 1 ]]; then
        fast=(-c fsync=off -c synchronous_commit=off -c full_page_writes=off)
    fi
    mkdir -p "$DIR"
    chown postgres:postgres "$DIR"
    chmod 700 "$DIR"
    as_postgres "$bin/initdb" -D "$DATA" -U postgres -E UTF8 --locale=C.UTF-8 \
        --auth-local=trust --auth-host=scram-sha-256 >"$DIR/initdb.log" 2>&1 ||
        { cat "$DIR/initdb.log" >&2; die "initdb failed"; }
    as_postgres "$bin/pg_ctl" -D "$DATA" -l "$DIR/server.log" -w -t 60 \
        -o "-c listen_addresses=127.0.0.1 -p $PORT -k $DIR -c max_connections=100 ${fast[*]}" \
        start >/dev/null || { cat "$DIR/server.log" >&2; die "PostgreSQL did not start"; }
    local i
    for ((i = 0; ; i++)); do
        "$bin/pg_isready" -q -h 127.0.0.1 -p "$PORT" && break
        ((i < 60)) || { cat "$DIR/server.log" >&2; die "PostgreSQL not ready after 30 s"; }
        sleep 0.5
    done
    as_postgres "$bin/psql" -q -h "$DIR" -p "$PORT" -U postgres -d postgres -v ON_ERROR_STOP=1 \
        -c "CREATE ROLE $ROLE LOGIN CREATEDB PASSWORD '$password'" \
        -c "CREATE DATABASE $ROLE OWNER $ROLE"
    echo "postgres://$ROLE:$password@127.0.0.1:$PORT/$ROLE" >"$URL_FILE"
    chmod 600 "$URL_FILE"
    echo "Started $("$bin/postgres" --version) on 127.0.0.1:$PORT (data in $DIR)." >&2
    announce
}

announce() {
    echo "Use it with:" >&2
    echo "  export BENCH_DATABASE_URL=$(print_url)" >&2
    echo "  .venv/bin/python bench/sessions.py" >&2
    echo "Stop it with: bench/pg.sh stop" >&2
    print_url
}

stop() {
    local bin
    if running && bin=$(pg_bin); then
        as_postgres "$bin/pg_ctl" -D "$DATA" stop -m fast -w -t 30 >/dev/null 2>&1 ||
            as_postgres "$bin/pg_ctl" -D "$DATA" stop -m immediate -w >/dev/null 2>&1
        echo "Stopped the PostgreSQL in $DIR." >&2
    fi
    rm -rf "$DIR"
}

case ${1:-start} in
start) start ;;
url) print_url ;;
stop) stop ;;
*) die "usage: $0 [start|url|stop]" ;;
esac
