#!/usr/bin/env node
// `npm run build [-- PROTO_DIR]`: copy the protocol (cfarena/v1/arena.proto) from the
// repository's proto/ directory (or PROTO_DIR) into ./proto, where bot.js loads it at
// run time. The bot's directory must hold everything it reads: a tournament's sandbox
// shows it that directory and the system, nothing else.
"use strict";
const fs = require("fs");
const path = require("path");

const source = path.resolve(process.argv[2] || path.join(__dirname, "..", "..", "proto"));
const file = path.join("cfarena", "v1", "arena.proto");
if (!fs.existsSync(path.join(source, file))) {
  console.error(`build: no ${file} under ${source}; give the proto directory: ` +
                "npm run build -- PATH/TO/proto");
  process.exit(2);
}
fs.mkdirSync(path.join(__dirname, "proto", "cfarena", "v1"), { recursive: true });
fs.copyFileSync(path.join(source, file), path.join(__dirname, "proto", file));
console.log(`build: copied ${path.join(source, file)} to proto/${file}`);
