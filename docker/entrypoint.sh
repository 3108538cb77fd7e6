#!/bin/sh
# cfarena's container entrypoint (docker-compose.yml). No secret is a default: each
# is generated on first start into the secrets directory (a volume) and read from
# there after, or provided there beforehand (a Docker secret, a file you made).
#
#   entrypoint.sh init                 make the missing secrets (the `secrets` service)
#   entrypoint.sh serve [ARGS...]      register the house bots with their tokens, then
#                                      `cfarena serve` with the admin token file and ARGS
#   entrypoint.sh bot NAME MODULE      play house bot NAME (its token from the directory)
#   entrypoint.sh CMD [ARGS...]        any other command, with CFARENA_DB set (e.g.
#                                      `cfarena standings`, `cfarena bots add mybot`)
#
# Environment: CFARENA_SECRETS (the directory, default /run/cfarena), CFARENA_DB
# (default: PostgreSQL at $CFARENA_DB_HOST, user and database cfarena, the password
# from db.password), CFARENA_HOUSE_BOTS (the bots `serve` registers, default
# "random greedy smart montecarlo"), CFARENA_HOST, CFARENA_PORT, CFARENA_HTTP_HOST,
# CFARENA_HTTP_PORT (where `serve` listens; default 0.0.0.0, 50051, 0.0.0.0, 8080).
set -eu

SECRETS=${CFARENA_SECRETS:-/run/cfarena}
HOUSE_BOTS=${CFARENA_HOUSE_BOTS:-random greedy smart montecarlo}
POSTGRES_UID=${CFARENA_POSTGRES_UID:-999}  # the postgres image's user (reads db.password)

die() {
    echo "cfarena entrypoint: $*" >&2
    exit 2
}

# make_secret NAME: a random secret in $SECRETS/NAME unless one is there (readable by
# its owner only; written whole, then renamed, so a half-written file is never read)
make_secret() {
    [ -s "$SECRETS/$1" ] && return 0
    (umask 077 && python3 -c 'import secrets; print(secrets.token_urlsafe(32))' \
        >"$SECRETS/$1.new") && mv "$SECRETS/$1.new" "$SECRETS/$1"
}

# secret_file NAME: the path of the secret NAME; fails if it is missing or empty
secret_file() {
    [ -s "$SECRETS/$1" ] || die "no secret $SECRETS/$1: run \`entrypoint.sh init\` first"
    printf '%s' "$SECRETS/$1"
}

# the PostgreSQL URL, its password read from the file and URL-encoded (surrounding
# whitespace dropped, as make_secret wrote it: any character inside is kept)
database_url() {
    if [ -z "${CFARENA_DB:-}" ]; then
        password_file=$(secret_file db.password) || exit 2
        CFARENA_DB=$(python3 -c 'import sys, urllib.parse
password = open(sys.argv[1], encoding="utf-8").read().strip()
print(f"postgresql+psycopg://cfarena:{urllib.parse.quote(password, safe=str())}@{sys.argv[2]}/cfarena")' \
            "$password_file" "${CFARENA_DB_HOST:-db}") || exit 2
    fi
    export CFARENA_DB
}

[ $# -ge 1 ] || die "usage: entrypoint.sh init | serve [ARGS] | bot NAME MODULE | CMD [ARGS]"
command=$1
shift
case "$command" in
init)
    mkdir -p "$SECRETS"
    chmod 700 "$SECRETS"
    for name in db.password admin.token; do make_secret "$name"; done
    for bot in $HOUSE_BOTS; do make_secret "$bot.token"; done
    if [ "$(id -u)" = 0 ]; then
        # PostgreSQL's entrypoint reads its password file as its own user, through a
        # directory it may pass but not list
        chmod 711 "$SECRETS"
        chown "$POSTGRES_UID" "$SECRETS/db.password"
    fi
    echo "cfarena entrypoint: secrets in $SECRETS"
    ;;
serve)
    database_url
    for bot in $HOUSE_BOTS; do
        # registered on the first start only: after `cfarena bots rotate` or `revoke`
        # the bot keeps what the operator gave it (its token file is not its token then)
        token_file=$(secret_file "$bot.token") || exit 2
        cfarena bots show "$bot" --json >/dev/null 2>&1 \
            || cfarena bots add "$bot" --token-file "$token_file" --quiet
    done
    secret_file admin.token >/dev/null  # present and not empty
    exec cfarena serve --host "${CFARENA_HOST:-0.0.0.0}" --port "${CFARENA_PORT:-50051}" \
        --http-host "${CFARENA_HTTP_HOST:-0.0.0.0}" --http-port "${CFARENA_HTTP_PORT:-8080}" \
        --admin-token-file "$SECRETS/admin.token" "$@"
    ;;
bot)
    [ $# -eq 2 ] || die "usage: entrypoint.sh bot NAME MODULE"
    token_file=$(secret_file "$1.token") || exit 2
    CFARENA_TOKEN=$(tr -d ' \t\r\n' <"$token_file")
    export CFARENA_TOKEN
    exec python3 -m cfarena.sdk run "$2" --retries -1
    ;;
*)
    # the compose's database when its secrets are there; else (`docker run IMAGE
    # cfarena ... --db sqlite:///...`) the command as given
    if [ -n "${CFARENA_DB:-}" ] || [ -s "$SECRETS/db.password" ]; then database_url; fi
    exec "$command" "$@"
    ;;
esac
