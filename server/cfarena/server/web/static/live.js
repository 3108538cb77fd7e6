// cfarena: live updates of the server-rendered pages (server-sent events).
// No framework, no build step; every text is set with textContent (no HTML injection),
// but the leaderboard's rows, which come rendered (and escaped) by the server's template.
"use strict";
(function () {
  const $ = (sel, root) => (root || document).querySelector(sel);
  const el = (tag, attrs, text) => {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  };
  const setLive = (on) => { const dot = $("#live-status"); if (dot) dot.classList.toggle("on", on); };

  // ------------------------------------------------------------- leaderboard
  let refreshTimer = null;
  let trailingTimer = null;
  async function refreshLeaderboard() {
    // the rows as the server renders them (the same template as the page's first
    // view); the match count from the JSON API
    const main = $("#page-leaderboard");
    const pool = encodeURIComponent(main ? main.dataset.pool : "");
    const [rows, api] = await Promise.all([
      fetch("/leaderboard/rows?pool=" + pool, { cache: "no-store" }),
      fetch("/api/leaderboard?pool=" + pool, { cache: "no-store" })]);
    if (!rows.ok || !api.ok) return;
    const board = await api.json();
    const parsed = new DOMParser().parseFromString(
      "<table><tbody>" + await rows.text() + "</tbody></table>", "text/html");
    const tbody = $("#leaderboard tbody");
    const before = {};
    for (const tr of tbody.querySelectorAll("tr[data-bot]")) before[tr.dataset.bot] = tr.textContent;
    const fresh = [...parsed.querySelectorAll("tbody > tr")];
    for (const tr of fresh) {
      const was = before[tr.dataset.bot];
      if (was !== undefined && was !== tr.textContent) tr.classList.add("changed");
    }
    tbody.replaceChildren(...fresh);
    const count = $("#finished-count");
    count.dataset.count = String(board.finished);
    count.textContent = String(board.finished);
  }
  function scheduleRefresh() {
    // soon after a match is stored, and once more when things have been quiet for
    // a while (the server recomputes the ratings at most every 2 s)
    if (trailingTimer !== null) clearTimeout(trailingTimer);
    trailingTimer = setTimeout(() => { trailingTimer = null; refreshLeaderboard().catch(() => {}); }, 2500);
    if (refreshTimer !== null) return;
    refreshTimer = setTimeout(() => { refreshTimer = null; refreshLeaderboard().catch(() => {}); }, 250);
  }

  // ----------------------------------------------------------- running list
  async function addRunning(id) {
    const list = $("#running");
    if (!list || list.querySelector(`li[data-match="${CSS.escape(id)}"]`)) return;
    const li = el("li", { "data-match": id });
    const a = el("a", { href: "/matches/" + encodeURIComponent(id) }, id);
    li.appendChild(a);
    list.appendChild(li);
    updateEmpty();
    try {
      const resp = await fetch("/api/matches/" + encodeURIComponent(id), { cache: "no-store" });
      if (resp.ok) {
        const m = await resp.json();
        a.textContent = m.seats.map((s) => s.bot).join(" · ");
        li.appendChild(document.createTextNode(" "));
        li.appendChild(el("span", { class: "muted" }, "started just now"));
      }
    } catch (e) { /* the id stays as the link text */ }
  }
  function removeRunning(id) {
    const li = $(`#running li[data-match="${CSS.escape(id)}"]`);
    if (li) li.remove();
    updateEmpty();
  }
  function updateEmpty() {
    const list = $("#running"); const empty = $(".empty-running");
    if (list && empty) empty.hidden = list.children.length > 0;
  }

  function watchLadder() {
    const source = new EventSource("/api/events");
    source.onopen = () => setLive(true);
    source.onerror = () => setLive(false);
    source.addEventListener("started", (e) => addRunning(JSON.parse(e.data).match));
    source.addEventListener("ended", (e) => removeRunning(JSON.parse(e.data).match));
    const stored = (e) => { removeRunning(JSON.parse(e.data).match); if ($("#leaderboard")) scheduleRefresh(); };
    source.addEventListener("finished", stored);
    source.addEventListener("aborted", stored);
  }

  // ------------------------------------------------------------- live match
  // the layout as rows of dominoes: the centre, each spoke a row, a double's toes
  // rows under it; every tile shows the side it joins first and its open end last
  function domino(p, snap) {
    const [a, b] = p.tile.split("-").map(Number);
    const joined = p.parent === null ? a : a + b - p.open;
    const tile = el("span", { class: "dom" + (a === b ? " double" : "") + (snap.pending === p.node ? " pending" : ""), title: p.tile });
    tile.appendChild(el("i", {}, joined));
    tile.appendChild(el("i", {}, p.parent === null ? b : p.open));
    return tile;
  }
  function renderLayout(snap) {
    const kids = {};
    for (const p of snap.layout) if (p.parent !== null) (kids[p.parent] = kids[p.parent] || []).push(p);
    const box = $("#live-layout");
    box.replaceChildren();
    const branch = (start, parent, label) => {
      const row = el("div", { class: "branch" });
      if (label) row.appendChild(el("span", { class: "label" }, label));
      parent.appendChild(row);
      let p = start;
      for (;;) {
        row.appendChild(domino(p, snap));
        const next = kids[p.node] || [];
        if (next.length === 1 && p.free === 0 && p.tile.split("-")[0] !== p.tile.split("-")[1]) { p = next[0]; continue; }
        if (p.free > 0) row.appendChild(el("span", { class: "open" }, "open " + p.open + (p.free > 1 ? " ×" + p.free : "")));
        if (next.length) {
          const sub = el("div", { class: "sub" });
          parent.appendChild(sub);
          next.forEach((c) => branch(c, sub, ""));
        }
        return;
      }
    };
    const centre = snap.layout.find((p) => p.parent === null);
    if (!centre) { box.appendChild(el("p", { class: "muted" }, "No tile on the table yet.")); return; }
    const row = el("div", { class: "branch" });
    row.appendChild(el("span", { class: "label" }, "centre"));
    row.appendChild(domino(centre, snap));
    if (centre.free > 0) row.appendChild(el("span", { class: "open" }, centre.free + " spokes open"));
    box.appendChild(row);
    (kids[centre.node] || []).forEach((c, i) => branch(c, box, "spoke " + (i + 1)));
  }

  function seatName(seat) {
    const row = $(`#live-scores tr[data-seat="${seat}"]`);
    return row ? row.dataset.bot : "seat " + seat;
  }
  function describe(ev) {
    const who = ev.seat === null ? "the referee" : seatName(ev.seat);
    switch (ev.kind) {
      case "round_start": return `Round ${ev.round + 1} starts with ${ev.tile}; ${who} plays first`;
      case "draw_off": return `${who} draws ${ev.tile} in the draw-off`;
      case "centre": return `${who} puts ${ev.tile} in the centre`;
      case "play": return `${who} plays ${ev.tile}`;
      case "draw": return `${who} draws a tile`;
      case "pass": return `${who} passes`;
      case "round_end": {
        const how = ev.reason === "went_out" ? `${who} went out` : "blocked";
        const scores = (ev.scores || []).map((n, s) => `${seatName(s)} ${n}`).join(", ");
        return `Round ${ev.round + 1} ends (${how}): ${scores}`;
      }
      default: return ev.text;
    }
  }

  function renderSnapshot(snap, fresh) {
    $("#live-round").textContent = `round ${snap.round + 1} · double ${snap.round_double}`;
    renderLayout(snap);
    const bone = $("#live-boneyard");
    bone.dataset.count = String(snap.boneyard);
    bone.textContent = String(snap.boneyard);
    snap.hand_sizes.forEach((n, seat) => {
      const row = $(`#live-hands tr[data-seat="${seat}"]`);
      if (row) {
        row.dataset.handSize = String(n);
        row.querySelector(".hand-size").textContent = String(n);
        row.querySelector(".total").textContent = String(snap.totals[seat] ?? 0);
        row.classList.toggle("to-move", snap.to_move === seat);  // as the events say
      }
    });
    const list = $("#live-events");
    if (fresh) list.replaceChildren();
    for (const ev of snap.events) {
      if (list.querySelector(`li[data-i="${ev.i}"]`)) continue;
      list.insertBefore(el("li", { "data-i": String(ev.i), "data-kind": ev.kind }, describe(ev)), list.firstChild);
    }
    while (list.children.length > 200) list.lastChild.remove();
  }

  function watchMatch(box) {
    const id = box.dataset.match;
    const source = new EventSource("/api/matches/" + encodeURIComponent(id) + "/live");
    source.onopen = () => setLive(true);
    source.onerror = () => setLive(false);
    source.addEventListener("snapshot", (e) => renderSnapshot(JSON.parse(e.data), true));
    source.addEventListener("update", (e) => renderSnapshot(JSON.parse(e.data), false));
    source.addEventListener("ended", () => { $("#live-round").textContent = "match over · storing the result…"; });
    source.addEventListener("stored", () => { source.close(); window.location.reload(); });
  }

  document.addEventListener("DOMContentLoaded", () => {
    const box = $("#live");
    if (box) watchMatch(box);
    else if ($("#running")) watchLadder();
  });
})();
