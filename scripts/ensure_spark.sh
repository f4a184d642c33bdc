#!/usr/bin/env bash
# Make sure what the Spark analytics (spark/, `meshmq analytics`) needs from
# Debian is installed, installing only what is missing:
#   - the JDBC drivers as files on disk (Spark gets them with spark.jars;
#     nothing is downloaded at run time):
#       libxerial-sqlite-jdbc-java -> /usr/share/java/sqlite-jdbc.jar (+ its JNI library)
#       libpostgresql-jdbc-java    -> /usr/share/java/postgresql.jar
#   - a Java runtime of version 17 or newer (PySpark 4 needs it):
#       openjdk-17-jre-headless, only when `java` is missing or older
# pyspark itself is a Python package (the `analytics` extra), not installed here.
#
# Idempotent; prints nothing when everything is already there.
set -euo pipefail
# shellcheck source=scripts/apt.sh
source "$(dirname "${BASH_SOURCE[0]}")/apt.sh"

prog=ensure_spark
die() { echo "$prog: error: $*" >&2; exit 1; }

SQLITE_JAR=/usr/share/java/sqlite-jdbc.jar
POSTGRES_JAR=/usr/share/java/postgresql.jar

java_major() {
    # "openjdk version "17.0.15" 2025-04-15" -> 17; "1.8.0_392" -> 8; nothing -> 0
    local v
    v=$(java -version 2>&1 | sed -n 's/.*version "\([^"]*\)".*/\1/p' | head -n1) || true
    [[ -z $v ]] && { echo 0; return; }
    if [[ $v == 1.* ]]; then v=${v#1.}; fi
    echo "${v%%[.+-]*}"
}

have_java() { command -v java >/dev/null 2>&1 && (( $(java_major) >= 17 )); }

missing=()
[[ -f $SQLITE_JAR ]] || missing+=(libxerial-sqlite-jdbc-java)
[[ -f $POSTGRES_JAR ]] || missing+=(libpostgresql-jdbc-java)
have_java || missing+=(openjdk-17-jre-headless)

[[ ${#missing[@]} -eq 0 ]] && exit 0

apt_install --no-install-recommends "$prog" "missing ${missing[*]}" \
    "install a Java 17 runtime and the SQLite/PostgreSQL JDBC jars by hand (MESHMQ_SQLITE_JDBC_JAR / MESHMQ_POSTGRES_JDBC_JAR name jars elsewhere)" \
    "${missing[@]}"

[[ -f $SQLITE_JAR ]] || die "libxerial-sqlite-jdbc-java installed but $SQLITE_JAR is missing"
[[ -f $POSTGRES_JAR ]] || die "libpostgresql-jdbc-java installed but $POSTGRES_JAR is missing"
have_java || die "a Java 17 runtime was installed but \`java\` is still $(java_major 2>/dev/null || echo missing); point JAVA_HOME/PATH or update-alternatives at /usr/lib/jvm/java-17-openjdk-*"
