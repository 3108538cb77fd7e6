# cfarena: referee, CLI and sample bots in one image.
FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml hatch_build.py README.md ./
COPY proto ./proto
COPY client_sdk ./client_sdk
COPY server ./server
COPY bots ./bots
RUN pip install --no-cache-dir '.[postgres]'
EXPOSE 50051 8080
CMD ["cfarena", "--help"]
