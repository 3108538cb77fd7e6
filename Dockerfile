# cfarena: referee, CLI, sample bots and bubblewrap in one image. docker-compose.yml
# runs it through docker/entrypoint.sh (secrets generated on first start, no default
# token or password). bubblewrap lets `cfarena run-tournament` sandbox the bots it
# starts; a container needs extra privileges for that (docs/OPERATIONS.md, "Docker").
FROM python:3.11-slim
RUN apt-get update \
    && apt-get install -y --no-install-recommends bubblewrap libseccomp2 \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY pyproject.toml hatch_build.py README.md ./
COPY proto ./proto
COPY client_sdk ./client_sdk
COPY bots ./bots
COPY server ./server
RUN pip install --no-cache-dir '.[postgres]'
COPY docker/entrypoint.sh /usr/local/bin/cfarena-entrypoint
EXPOSE 50051 8080
ENTRYPOINT ["cfarena-entrypoint"]
CMD ["cfarena", "--help"]
