#!/bin/sh
# Build the Go starter from Debian's packages, offline: generate the protocol's Go code
# from the .proto (protoc, protoc-gen-go, protoc-gen-go-grpc) into a GOPATH, then
# compile the bot in GOPATH mode against the gRPC and protobuf sources Debian installs
# under /usr/share/gocode (no module download).
#
#   ./build.sh [PROTO_DIR]     PROTO_DIR defaults to the repository's proto/
#
# Writes build/cfarena-greedy (set OUT=DIR to build elsewhere; the generated code goes
# to OUT/gopath).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
proto=${1:-$here/../../proto}
out=${OUT:-$here/build}
if [ ! -f "$proto/cfarena/v1/arena.proto" ]; then
  echo "build.sh: no cfarena/v1/arena.proto under $proto; give the proto directory:" \
       "./build.sh PATH/TO/proto" >&2
  exit 2
fi
src=$out/gopath/src
mkdir -p "$src"
# the .proto names no Go package: M maps it to the import path cfarena/arenapb, which
# protoc writes to $src/cfarena/arenapb/
map=Mcfarena/v1/arena.proto=cfarena/arenapb
protoc -I "$proto" --go_out="$src" --go_opt="$map" --go-grpc_out="$src" \
  --go-grpc_opt="$map" cfarena/v1/arena.proto
cd "$here"
GO111MODULE=off GOPATH="$out/gopath:/usr/share/gocode" go build -o "$out/cfarena-greedy" .
echo "build.sh: built $out/cfarena-greedy"
