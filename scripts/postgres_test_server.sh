#!/usr/bin/env bash
# Starts a PostgreSQL server on loopback for the tests (installing Debian's package if needed), creates a
# user and a database, and prints the line to export: eval "$(bash scripts/postgres_test_server.sh)".
set -euo pipefail
if ! command -v pg_lsclusters >/dev/null 2>&1 || [ -z "$(pg_lsclusters --no-header 2>/dev/null)" ]; then
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >&2
fi
read -r version cluster port status _ < <(pg_lsclusters --no-header | head -n 1)
if [ "$status" != "online" ]; then
  pg_ctlcluster "$version" "$cluster" start >&2
fi
su postgres -c "psql -p $port -tAc \"SELECT 1 FROM pg_roles WHERE rolname='mutransfer'\"" | grep -q 1 ||
  su postgres -c "psql -p $port -qc \"CREATE USER mutransfer PASSWORD 'mutransfer';\"" >&2
su postgres -c "psql -p $port -tAc \"SELECT 1 FROM pg_database WHERE datname='mutransfer_test'\"" | grep -q 1 ||
  su postgres -c "psql -p $port -qc \"CREATE DATABASE mutransfer_test OWNER mutransfer;\"" >&2
echo "export MUTRANSFER_TEST_POSTGRES=postgresql://mutransfer:mutransfer@127.0.0.1:$port/mutransfer_test"
