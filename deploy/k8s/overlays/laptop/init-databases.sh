#!/usr/bin/env bash
# Runs once, when the PostgreSQL container's data is first initialised
# (docker-entrypoint-initdb.d): the laptop overlay's StatefulSet, and docker-compose.yml's
# postgres (deploy/compose/init-databases.sh is a link to this file). One role and one
# database per service, each role owning only its own database: a service never reads
# another's. Each is taken from the service's own URL, <SERVICE>_DATABASE_URL, so each
# password is written once: postgresql://<role>:<password>@host:port/<role>.
set -euo pipefail

url_pattern='^postgres(ql)?://([a-z_][a-z0-9_]*):([^@]+)@[^/]+/([a-z_][a-z0-9_]*)$'
for url_var in IDENTITY_DATABASE_URL TRACKING_DATABASE_URL WEBHOOKS_DATABASE_URL \
    AGENT_ACCOUNTS_DATABASE_URL; do
    url="${!url_var:?set $url_var}"
    if [[ ! $url =~ $url_pattern ]] || [[ ${BASH_REMATCH[2]} != "${BASH_REMATCH[4]}" ]]; then
        echo "$url_var must be postgresql://<name>:<password>@host:port/<name>" >&2
        exit 1
    fi
    db="${BASH_REMATCH[4]}"
    password="${BASH_REMATCH[3]}"
    # psql variables (:"name" and :'literal') quote the values, so no SQL is built by hand.
    psql --quiet -v ON_ERROR_STOP=1 --username "${POSTGRES_USER:-postgres}" --dbname postgres \
        -v db="$db" -v password="$password" <<'SQL'
CREATE ROLE :"db" LOGIN PASSWORD :'password';
CREATE DATABASE :"db" OWNER :"db";
REVOKE ALL ON DATABASE :"db" FROM PUBLIC;
SQL
    echo "created database and role $db"
done
