# syntax=docker/dockerfile:1
# guardproxy container image: two stages.
#   builder  builds the guardproxy wheel and installs it with its runtime dependencies into /opt/venv
#   runtime  python:3.11-slim + that venv only (no compiler, no pip, no sources), as a non-root user
#
#   docker build -t guardproxy:local .
#   docker run --rm -p 127.0.0.1:8790:8790 -e GUARDPROXY_AUTH_TOKEN=... guardproxy:local
#
# The image listens on 0.0.0.0:8790. guardproxy refuses a non-loopback address unless
# GUARDPROXY_AUTH_TOKEN is set or GUARDPROXY_ALLOW_UNAUTHENTICATED_REMOTE=true waives it; the image
# sets neither, so whoever runs it has to choose (compose.yaml chooses, and says why).

ARG PYTHON_IMAGE=python:3.11-slim

# ---------------------------------------------------------------------------------------- builder
FROM ${PYTHON_IMAGE} AS builder

ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1

RUN python -m venv /opt/venv
WORKDIR /src

# Dependencies first, from pyproject.toml alone, so that a source change does not reinstall them.
COPY pyproject.toml ./
RUN python -c "import tomllib; print('\n'.join(tomllib.load(open('pyproject.toml', 'rb'))['project']['dependencies']))" \
        > /tmp/requirements.txt \
 && /opt/venv/bin/pip install --requirement /tmp/requirements.txt

# Then the project itself, as a wheel (the build context is an allowlist: see .dockerignore).
COPY . .
RUN /opt/venv/bin/pip wheel --no-deps --wheel-dir /tmp/dist . \
 && /opt/venv/bin/pip install --no-deps /tmp/dist/guardproxy-*.whl \
 && /opt/venv/bin/guardproxy check-policy \
 && /opt/venv/bin/pip uninstall --yes pip setuptools \
 && find /opt/venv -name '__pycache__' -type d -prune -exec rm -rf {} +

# ---------------------------------------------------------------------------------------- runtime
FROM ${PYTHON_IMAGE} AS runtime

LABEL org.opencontainers.image.title="guardproxy" \
      org.opencontainers.image.description="Guardrails between LLM clients and provider APIs"

# A fixed uid/gid so volume ownership is predictable; the audit-log folder is created here, owned by
# that user, so a fresh named volume mounted on it inherits the ownership and is writable.
RUN groupadd --system --gid 10001 guardproxy \
 && useradd --system --uid 10001 --gid guardproxy --home-dir /home/guardproxy --create-home \
        --shell /usr/sbin/nologin guardproxy \
 && mkdir -p /var/log/guardproxy /workspace /etc/guardproxy \
 && chown guardproxy:guardproxy /var/log/guardproxy

COPY --from=builder /opt/venv /opt/venv

ENV PATH="/opt/venv/bin:${PATH}" \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    GUARDPROXY_HOST=0.0.0.0 \
    GUARDPROXY_PORT=8790

USER 10001:10001
WORKDIR /home/guardproxy
EXPOSE 8790

# slim has no curl: probe /healthz with the standard library (it is answered without the token).
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/healthz' % os.environ.get('GUARDPROXY_PORT', '8790'), timeout=2)"]

ENTRYPOINT ["guardproxy"]
CMD ["serve"]
