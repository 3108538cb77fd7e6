// cfarena: live updates of the server-rendered pages (server-sent events).
// No framework, no build step; every text is set with textContent (no HTML injection).
"use strict";
(function () {
  const $ = (sel, root) => (root || document).querySelector(sel);
  const el = (tag, attrs, text) => {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  };
  const fmt = (v, digits) => (v === null || v === undefined ? "–" : Number(v).toFixed(digits));
  const pct = (v) => (v === null || v === undefined ? "–" : Math.round(100 * v) + "%");
  const setLive = (on) => { const dot = $("#live-status"); if (dot) dot.classList.toggle("on", on); };

  // ------------------------------------------------------------- leaderboard
  function leaderboardRow(r) {
    const tr = el("tr", { "data-bot": r.bot, "data-version": r.version });
    const td = (col, text, cls) => { const c = el("td", { "data-col": col }, text); if (cls) c.className = cls; tr.appendChild(c); return c; };
    td("rank", r.rank, "num");
    const bot = td("bot", null);
    bot.appendChild(el("a", { href: "/bots/" + encodeURIComponent(r.bot) }, r.bot));
    const ver = td("version", null);
    ver.appendChild(el("code", {}, r.version || "–"));
    if (r.versions > 1) { ver.appendChild(document.createTextNode(" ")); ver.appendChild(el("span", { class: "muted" }, "of " + r.versions)); }
    td("rating", r.rating, "num strong");
    td("interval", r.interval ? r.interval[0] + "–" + r.interval[1] : "–", "num hide-narrow");
    td("games", r.games, "num");
    td("win-share", pct(r.win_share), "num");
    td("points-per-round", fmt(r.points_per_round, 1), "num hide-narrow");
    td("faults", r.faults, r.faults ? "num warn" : "num");
    return tr;
  }

  let refreshTimer = null;
  async function refreshLeaderboard() {
    const main = $("#page-leaderboard");
    const pool = main ? main.dataset.pool : "";
    const resp = await fetch("/api/leaderboard?pool=" + encodeURIComponent(pool), { cache: "no-store" });
    if (!resp.ok) return;
    const board = await resp.json();
    const tbody = $("#leaderboard tbody");
    const before = {};
    for (const tr of tbody.querySelectorAll("tr[data-bot]")) before[tr.dataset.bot] = tr.textContent;
    tbody.replaceChildren(...board.rows.map((r) => {
      const tr = leaderboardRow(r);
      if (before[r.bot] !== undefined && before[r.bot] !== tr.textContent) tr.classList.add("changed");
      return tr;
    }));
    if (!board.rows.length) {
      const tr = el("tr", { class: "empty" }); const td = el("td", { colspan: "9" }, "No rated match yet: bots appear here after their first finished match.");
      tr.appendChild(td); tbody.appendChild(tr);
    }
    const count = $("#finished-count");
    count.dataset.count = String(board.finished);
    count.textContent = String(board.finished);
  }
  function scheduleRefresh() {
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
        li.appendChild(el("span", { class: "muted" }, id));
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
  function layoutText(snap) {
    // the layout as a tree: "#0 6-6 (centre)", children indented under their parent
    const kids = {};
    for (const p of snap.layout) { const k = p.parent === null ? "root" : p.parent; (kids[k] = kids[k] || []).push(p); }
    const lines = [];
    const walk = (p, depth) => {
      const open = p.free > 0 ? `  open ${p.open}${p.free > 1 ? " ×" + p.free : ""}` : "";
      const pending = snap.pending === p.node ? "  ← must be covered" : "";
      lines.push("  ".repeat(depth) + `#${p.node} ${p.tile}${p.parent === null ? " (centre)" : ""}${open}${pending}`);
      for (const c of kids[p.node] || []) walk(c, depth + 1);
    };
    for (const p of kids.root || []) walk(p, 0);
    return lines.length ? lines.join("\n") : "(empty)";
  }

  function renderSnapshot(snap, fresh) {
    $("#live-round").textContent = `round ${snap.round + 1} · double ${snap.round_double}`;
    $("#live-layout").textContent = layoutText(snap);
    const bone = $("#live-boneyard");
    bone.dataset.count = String(snap.boneyard);
    bone.textContent = String(snap.boneyard);
    snap.hand_sizes.forEach((n, seat) => {
      const chip = $(`#live-hands [data-seat="${seat}"]`);
      if (chip) { chip.dataset.handSize = String(n); const b = chip.querySelector("b"); if (b) b.textContent = String(n); }
      const row = $(`#live-scores tr[data-seat="${seat}"]`);
      if (row) {
        row.querySelector(".hand-size").textContent = String(n);
        row.querySelector(".total").textContent = String(snap.totals[seat] ?? 0);
        row.classList.toggle("to-move", snap.current_seat === seat);
      }
    });
    const list = $("#live-events");
    if (fresh) list.replaceChildren();
    for (const ev of snap.events) {
      if (list.querySelector(`li[data-i="${ev.i}"]`)) continue;
      list.insertBefore(el("li", { "data-i": String(ev.i), "data-kind": ev.kind }, ev.text), list.firstChild);
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
