#!/usr/bin/env bash
# Runs once, when the postgres volume is first initialised (docker-entrypoint-initdb.d).
# One role and one database per service, each role owning only its own database: a service
# never reads another's. SERVICE_DATABASES lists the names; each password comes from
# <NAME>_DB_PASSWORD (upper case), e.g. IDENTITY_DB_PASSWORD.
set -euo pipefail

for db in ${SERVICE_DATABASES:?SERVICE_DATABASES lists the databases to create}; do
    password_var="${db^^}_DB_PASSWORD"
    password="${!password_var:?set $password_var}"
    # psql variables (:"name" and :'literal') quote the values, so no SQL is built by hand.
    psql --quiet -v ON_ERROR_STOP=1 --username "${POSTGRES_USER:-postgres}" --dbname postgres \
        -v db="$db" -v password="$password" <<'SQL'
CREATE ROLE :"db" LOGIN PASSWORD :'password';
CREATE DATABASE :"db" OWNER :"db";
REVOKE ALL ON DATABASE :"db" FROM PUBLIC;
SQL
    echo "created database and role $db"
done
