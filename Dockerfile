# meshmq's images, one multi-stage file for deploy/docker-compose.yml (docs/docker.md):
#
#   target meshmq    the `meshmq` command (every service: router, journal, discovery,
#                    ha-coordinator, gateway) in a venv at /opt/meshmq
#   target etcd      Debian's etcd-server (+ etcdctl for the health check)
#   target postgres  Debian's PostgreSQL 15, initialised on first start
#   target report    meshmq + pyspark + Java 17 + Debian's PostgreSQL JDBC jar (`meshmq analytics report`)
#
# Everything builds FROM one BASE_IMAGE, so nothing else is pulled: the default
# is Docker Hub's Python image; a machine that reaches only Debian's mirror and
# PyPI uses a debootstrapped Debian (scripts/docker_base.sh -> meshmq-base:bookworm),
# whose Python is Debian's python3 (3.11 on bookworm). Written for the classic
# builder as well as BuildKit (Debian's docker-compose 1.29 uses the former):
# no RUN --mount, no heredocs.
#
# Behind a TLS-intercepting proxy, pass its CA certificates (PEM text) as
# EXTRA_CA_CERTS; they are trusted only in the stages that download (apt and
# pip), and the runtime images neither contain them nor show them in their history.
# MESHMQ_PIP_INDEX_URL / MESHMQ_PIP_EXTRA_INDEX_URL point pip at a mirror.
ARG BASE_IMAGE=python:3.11-slim-bookworm

# --- a Python >= 3.11 with venv: the base's own (python:*-slim) or Debian's ---
FROM ${BASE_IMAGE} AS python
ENV DEBIAN_FRONTEND=noninteractive LANG=C.UTF-8
RUN set -eu; \
    if ! python3 -c 'import sys, venv, ensurepip; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then \
        apt-get update -qq; \
        apt-get install -y -qq --no-install-recommends python3 python3-venv >/dev/null; \
        rm -rf /var/lib/apt/lists/*; \
    fi; \
    python3 --version

# --- build: the venv, with the proxy's CA trusted while downloading ---
FROM python AS build
ARG EXTRA_CA_CERTS=""
ARG MESHMQ_PIP_INDEX_URL=""
ARG MESHMQ_PIP_EXTRA_INDEX_URL=""
RUN set -eu; \
    if ! [ -f /etc/ssl/certs/ca-certificates.crt ] || [ -n "$EXTRA_CA_CERTS" ]; then \
        apt-get update -qq; \
        apt-get install -y -qq --no-install-recommends ca-certificates >/dev/null; \
        rm -rf /var/lib/apt/lists/*; \
    fi; \
    if [ -n "$EXTRA_CA_CERTS" ]; then \
        printf '%s\n' "$EXTRA_CA_CERTS" >/usr/local/share/ca-certificates/meshmq-build-extra.crt; \
        update-ca-certificates >/dev/null; \
    fi
# pip trusts the system bundle (with the extra CA), not its own certifi copy.
ENV PIP_CERT=/etc/ssl/certs/ca-certificates.crt PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1 \
    PIP_DEFAULT_TIMEOUT=180
RUN python3 -m venv /opt/meshmq
# Dependencies first (their layer stays cached while only the source changes).
COPY pyproject.toml constraints.txt /src/
RUN set -eu; \
    idx=""; \
    [ -z "$MESHMQ_PIP_INDEX_URL" ] || idx="--index-url $MESHMQ_PIP_INDEX_URL"; \
    [ -z "$MESHMQ_PIP_EXTRA_INDEX_URL" ] || idx="$idx --extra-index-url $MESHMQ_PIP_EXTRA_INDEX_URL"; \
    /opt/meshmq/bin/python -c "import tomllib; print('\n'.join(tomllib.load(open('/src/pyproject.toml', 'rb'))['project']['dependencies']))" >/src/requirements.txt; \
    /opt/meshmq/bin/pip install -q $idx -c /src/constraints.txt 'setuptools>=68' wheel -r /src/requirements.txt

# --- the meshmq image: every meshmq service ---
# The project itself installs here, offline (--no-index, setuptools is in the
# venv): a change to the source rebuilds only these last small layers, and the
# build stage, cached, stays the one copy of the dependencies.
FROM python AS meshmq
COPY --from=build /opt/meshmq /opt/meshmq
COPY pyproject.toml README.md /src/
COPY meshmq /src/meshmq
COPY services /src/services
COPY spark /src/spark
RUN /opt/meshmq/bin/pip install -q --no-index --no-deps --no-build-isolation --no-cache-dir /src \
    && rm -rf /src && /opt/meshmq/bin/meshmq --help >/dev/null \
    && mkdir -p /etc/meshmq /var/lib/meshmq /run/meshmq
ENV PATH=/opt/meshmq/bin:$PATH PYTHONUNBUFFERED=1
WORKDIR /var/lib/meshmq
CMD ["meshmq", "--help"]

# --- etcd from Debian ---
FROM ${BASE_IMAGE} AS etcd
ENV DEBIAN_FRONTEND=noninteractive
RUN apt-get update -qq \
    && apt-get install -y -qq --no-install-recommends etcd-server etcd-client >/dev/null \
    && rm -rf /var/lib/apt/lists/* \
    && mkdir -p /var/lib/etcd-data
CMD ["etcd", "--data-dir=/var/lib/etcd-data"]

# --- Prometheus from Debian (compose profile "monitoring"; deploy/monitoring/) ---
FROM ${BASE_IMAGE} AS prometheus
ENV DEBIAN_FRONTEND=noninteractive
RUN apt-get update -qq \
    && apt-get install -y -qq --no-install-recommends prometheus >/dev/null \
    && rm -rf /var/lib/apt/lists/* \
    && mkdir -p /var/lib/prometheus-data
COPY deploy/monitoring/prometheus.yml /etc/prometheus/prometheus.yml
COPY deploy/monitoring/meshmq-rules.yml /etc/prometheus/meshmq-rules.yml
CMD ["prometheus", "--config.file=/etc/prometheus/prometheus.yml", "--storage.tsdb.path=/var/lib/prometheus-data", "--web.listen-address=0.0.0.0:9090"]

# --- PostgreSQL 15 from Debian ---
FROM ${BASE_IMAGE} AS postgres
ENV DEBIAN_FRONTEND=noninteractive
RUN apt-get update -qq \
    && apt-get install -y -qq --no-install-recommends postgresql-15 >/dev/null \
    && rm -rf /var/lib/apt/lists/* \
    && mkdir -p /var/lib/postgresql/data /var/run/postgresql \
    && chown -R postgres:postgres /var/lib/postgresql /var/run/postgresql
COPY deploy/docker/postgres-entrypoint.sh /usr/local/bin/meshmq-postgres
ENV PATH=/usr/lib/postgresql/15/bin:$PATH PGDATA=/var/lib/postgresql/data
USER postgres
CMD ["meshmq-postgres"]

# --- the Spark report: pyspark in the venv, Java 17 and the JDBC jar from Debian ---
FROM build AS build-report
# (ARGs are per stage; the CA the build stage installed is in its filesystem)
ARG MESHMQ_PIP_INDEX_URL=""
ARG MESHMQ_PIP_EXTRA_INDEX_URL=""
RUN set -eu; \
    idx=""; \
    [ -z "$MESHMQ_PIP_INDEX_URL" ] || idx="--index-url $MESHMQ_PIP_INDEX_URL"; \
    [ -z "$MESHMQ_PIP_EXTRA_INDEX_URL" ] || idx="$idx --extra-index-url $MESHMQ_PIP_EXTRA_INDEX_URL"; \
    /opt/meshmq/bin/pip install -q $idx -c /src/constraints.txt 'pyspark>=4.0' 'matplotlib>=3.8'

FROM python AS report
# The JDK's postinst needs man1 (slim images drop /usr/share/man).
RUN mkdir -p /usr/share/man/man1 \
    && apt-get update -qq \
    && apt-get install -y -qq --no-install-recommends openjdk-17-jre-headless libpostgresql-jdbc-java >/dev/null \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build-report /opt/meshmq /opt/meshmq
COPY pyproject.toml README.md /src/
COPY meshmq /src/meshmq
COPY services /src/services
COPY spark /src/spark
RUN /opt/meshmq/bin/pip install -q --no-index --no-deps --no-build-isolation --no-cache-dir /src \
    && rm -rf /src && /opt/meshmq/bin/meshmq analytics report --help >/dev/null \
    && ln -s "$(/opt/meshmq/bin/python -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))')" /opt/spark
# The same image runs a Spark standalone master and worker (compose profile report): pyspark's own launcher.
ENV PATH=/opt/meshmq/bin:/opt/spark/bin:$PATH PYTHONUNBUFFERED=1 SPARK_HOME=/opt/spark \
    PYSPARK_PYTHON=/opt/meshmq/bin/python
WORKDIR /var/lib/meshmq
CMD ["meshmq", "analytics", "report", "--help"]
