#!/usr/bin/env node
// A greedy cfarena bot in JavaScript: among the tiles it may play, it plays the one
// with the most pips (ties: the higher high end, then the lower layout node), a drawn
// tile it may keep first if that tile fits; it passes only when it has no play. It
// speaks the protocol in ../../proto/cfarena/v1/arena.proto (copied to ./proto by
// `npm run build`) through @grpc/grpc-js; README.md says how to build and run it.
//
//   node bot.js [--server HOST:PORT] [--token T] [--capacity N] [--retries N]
//               [--tls] [--tls-ca CA.pem]
//
// Flags default to the environment a tournament gives the bots it starts
// (CFARENA_SERVER, CFARENA_TOKEN, CFARENA_CAPACITY), then to 127.0.0.1:50051 and 1.
// `--tls` (CFARENA_TLS=1) connects over TLS, verifying the referee against the
// system's CA roots; `--tls-ca PATH` (CFARENA_TLS_CA) against that PEM file instead.
// Exit status: 0 when the referee ends the stream or on SIGTERM/SIGINT, 1 when the
// connection fails (refused, or retries used up), 2 for usage errors.
"use strict";

const fs = require("fs");
const path = require("path");
const grpc = require("@grpc/grpc-js");
const protoLoader = require("@grpc/proto-loader");

const PROTOCOL = "cfarena.v1";
const CLIENT = "greedy (cfarena node starter 0.1.0)";
const VERSION = "0.1.0"; // Hello.version: a competition arena rates each version apart
const PROTO = path.join(__dirname, "proto", "cfarena", "v1", "arena.proto");

// Refusals that the same Hello would meet again: never retried.
const FATAL = new Set([
  grpc.status.UNAUTHENTICATED, grpc.status.PERMISSION_DENIED,
  grpc.status.INVALID_ARGUMENT, grpc.status.FAILED_PRECONDITION,
  grpc.status.UNIMPLEMENTED, grpc.status.RESOURCE_EXHAUSTED,
]);

// Ping every 10 s, give the connection up if a ping is not acknowledged in 5 s; the
// referee refuses pings more often than every 5 s.
const CHANNEL_OPTIONS = {
  "grpc.keepalive_time_ms": 10000,
  "grpc.keepalive_timeout_ms": 5000,
  "grpc.keepalive_permit_without_calls": 1,
};

function log(text) {
  process.stderr.write(`${new Date().toISOString()} ${text}\n`);
}

function usage(text) {
  process.stderr.write(`bot.js: error: ${text}\n`);
  process.exit(2);
}

function parseArgs(argv) {
  const opts = {
    server: process.env.CFARENA_SERVER || "127.0.0.1:50051",
    token: process.env.CFARENA_TOKEN || "",
    capacity: Number(process.env.CFARENA_CAPACITY || 1),
    retries: 10,
    tls: process.env.CFARENA_TLS === "1",
    "tls-ca": process.env.CFARENA_TLS_CA || "",
  };
  for (let i = 0; i < argv.length; i += 2) {
    const [flag, value] = [argv[i], argv[i + 1]];
    const key = flag.replace(/^--/, "");
    if (key === "tls" && key !== flag) {
      opts.tls = true;
      i -= 1; // a switch: no value
      continue;
    }
    if (!(key in opts) || key === flag || value === undefined) {
      usage(`unknown option or missing value: ${flag} (options: --server HOST:PORT, ` +
            "--token T, --capacity N, --retries N, --tls, --tls-ca PATH)");
    }
    opts[key] = ["capacity", "retries"].includes(key) ? Number(value) : value;
  }
  if (!opts.token) usage("no token: give --token or set CFARENA_TOKEN");
  if (!Number.isInteger(opts.capacity) || opts.capacity < 1 || opts.capacity > 64) {
    usage(`--capacity must be 1-64, got ${opts.capacity}`);
  }
  if (!Number.isInteger(opts.retries) || opts.retries < -1) {
    usage(`--retries must be -1 (never give up) or more, got ${opts.retries}`);
  }
  opts.credentials = grpc.credentials.createInsecure();
  if (opts["tls-ca"]) {
    let ca;
    try {
      ca = fs.readFileSync(opts["tls-ca"]);
    } catch (err) {
      usage(`--tls-ca: cannot read ${opts["tls-ca"]}: ${err.message}`);
    }
    opts.credentials = grpc.credentials.createSsl(ca);
  } else if (opts.tls) {
    opts.credentials = grpc.credentials.createSsl();
  }
  return opts;
}

// keepCase: true keeps the .proto's field names (legal_moves, match_id, turn_id);
// without it proto-loader renames them to camelCase (legalMoves ...).
// longs: String reads the uint64 turn_id exactly (a Number would round past 2^53);
// it is echoed back as that string. defaults: true gives unset scalars their zero
// value, so the 0-0 tile reads { a: 0, b: 0 }; an absent message field is null or
// undefined (that is how "no tile" differs from the 0-0 tile). oneofs: true adds the
// name of the field a oneof holds (RefereeMessage.kind).
function loadArena() {
  const definition = protoLoader.loadSync(PROTO, {
    keepCase: true, longs: String, enums: String, defaults: true, oneofs: true,
  });
  return grpc.loadPackageDefinition(definition).cfarena.v1;
}

// The greedy choice: an index into turn.legal_moves.
function choose(turn) {
  const weight = (m) => [m.tile.a + m.tile.b, m.tile.b, -m.parent];
  const heavier = (x, y) => {
    const [wx, wy] = [weight(x.move), weight(y.move)];
    for (let k = 0; k < wx.length; k++) if (wx[k] !== wy[k]) return wx[k] > wy[k];
    return false;
  };
  let plays = turn.legal_moves.map((move, index) => ({ move, index }))
    .filter(({ move }) => move.kind === "MOVE_KIND_PLAY");
  if (plays.length === 0) return 0; // only PASS (keep the drawn tile) is offered
  const drawn = turn.observation.drawn_tile;
  if (drawn != null) {
    const withDrawn = plays.filter(({ move }) => move.tile.a === drawn.a &&
                                                 move.tile.b === drawn.b);
    if (withDrawn.length > 0) plays = withDrawn;
  }
  return plays.reduce((best, p) => (heavier(p, best) ? p : best)).index;
}

let currentCall = null; // the stream in use, cancelled on SIGTERM/SIGINT

// One connection: Hello, Welcome, then matches until the stream ends. Resolves with
// { code, details, welcomed }.
function session(arena, opts) {
  return new Promise((resolve) => {
    const client = new arena.Arena(opts.server, opts.credentials, CHANNEL_OPTIONS);
    const call = client.Play();
    const seats = new Map(); // match_id -> our seat, from MatchStart to MatchEnd
    let welcomed = false;
    let refused = null; // set when the referee's first answer is not a Welcome
    currentCall = call;
    call.on("error", () => {}); // every ending is reported by "status"
    call.on("status", ({ code, details }) => {
      currentCall = null;
      client.close();
      resolve({ ...(refused || { code, details }), welcomed });
    });
    call.on("end", () => call.end());
    call.on("data", (msg) => {
      if (!welcomed) {
        if (msg.kind !== "welcome") {
          refused = { code: grpc.status.UNIMPLEMENTED, details: `the referee answered ` +
                      `Hello with ${msg.kind}, not a welcome: is it a cfarena.v1 referee?` };
          call.cancel();
          return;
        }
        welcomed = true;
        const w = msg.welcome;
        log(`connected to ${opts.server} as '${w.bot_name}' (referee ${w.server_version}, ` +
            `capacity ${w.capacity})`);
        return;
      }
      switch (msg.kind) {
        case "match_start":
          seats.set(msg.match_start.match_id, msg.match_start.seat);
          log(`match ${msg.match_start.match_id}: seat ${msg.match_start.seat} of ` +
              `${msg.match_start.seat_names.join(", ")}`);
          break;
        case "turn": {
          const turn = msg.turn;
          let index = 0;
          if (!seats.has(turn.match_id)) {
            log(`turn ${turn.turn_id} of unknown match ${turn.match_id}: answering move 0`);
          } else {
            try {
              index = choose(turn);
            } catch (err) { // a bug in the strategy: answer, and say so, rather than crash
              log(`match ${turn.match_id} turn ${turn.turn_id}: choose threw; playing the ` +
                  `first offered move: ${err.stack}`);
            }
          }
          call.write({ action: { match_id: turn.match_id, turn_id: turn.turn_id,
                                 move_index: index } });
          break;
        }
        case "match_end": {
          const end = msg.match_end;
          const seat = seats.get(end.match_id);
          seats.delete(end.match_id);
          log(`match ${end.match_id} over (${end.reason}): totals ${end.totals.join(" ")}, ` +
              `our rank ${seat === undefined ? "?" : end.ranks[seat]}`);
          break;
        }
        case "notice":
          log(`referee notice${msg.notice.match_id ? ` (match ${msg.notice.match_id})` : ""}: ` +
              msg.notice.text);
          break;
        default:
          log(`unexpected referee message ${msg.kind} ignored`);
      }
    });
    call.write({ hello: { token: opts.token, protocol: PROTOCOL, capacity: opts.capacity,
                          client: CLIENT, version: VERSION } });
  });
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const arena = loadArena();
  const stop = () => {
    if (currentCall) currentCall.cancel();
    process.exit(0);
  };
  process.on("SIGTERM", stop);
  process.on("SIGINT", stop);
  let failures = 0;
  for (;;) {
    const { code, details, welcomed } = await session(arena, opts);
    const name = Object.keys(grpc.status).find((k) => grpc.status[k] === code);
    if (code === grpc.status.OK) {
      log(`the referee closed the stream (${details || "OK"}); stopping`);
      return 0;
    }
    if (FATAL.has(code)) {
      log(`${opts.server} refused the bot: ${name}: ${details}`);
      return 1;
    }
    failures = welcomed ? 1 : failures + 1;
    if (opts.retries !== -1 && failures > opts.retries) {
      log(`cannot connect to ${opts.server}: ${name}: ${details} (gave up after ` +
          `${failures} failed attempts)`);
      return 1;
    }
    // 0.2 s, 0.4 s, 0.8 s ... up to 5 s, each shortened at random by up to half
    const delay = Math.min(5, 0.2 * 2 ** (failures - 1)) * (0.5 + Math.random() / 2);
    log(`connection to ${opts.server}: ${name}: ${details}; retrying in ` +
        `${delay.toFixed(2)} s`);
    await new Promise((r) => setTimeout(r, delay * 1000));
  }
}

if (require.main === module) {
  main().then((code) => process.exit(code));
}

module.exports = { choose };
