(function () {
  "use strict";
  var D = JSON.parse(document.getElementById("replay-data").textContent);
  var NS = "http://www.w3.org/2000/svg";
  var NF = D.frames.length;
  var P = D.players;
  // frame fields
  var F_KIND = 0, F_ROUND = 1, F_NODES = 2, F_PEND = 3, F_BONE = 4, F_DRAWABLE = 5, F_TURN = 6,
      F_ACTION = 7, F_ACTOR = 8, F_MOVE = 9, F_FALLBACK = 10, F_SIZES = 11;
  var PIP_COLORS = ["#222", "#1b6ca8", "#1e8a4c", "#c0392b", "#6c3483", "#b9770e", "#117a65",
    "#a93226", "#2e4053", "#7d6608", "#1a5276", "#922b21", "#145a32", "#4a235a", "#7e5109",
    "#0e6251", "#641e16", "#1b2631", "#873600"];
  var SEAT_COLORS = ["#e07a1f", "#1b6ca8", "#2a9d5c", "#c0392b", "#8e44ad", "#c9a227",
    "#16a5a5", "#7f8c8d"];

  function el(tag, attrs, parent) {
    var e = document.createElementNS(NS, tag);
    for (var k in attrs) { e.setAttribute(k, attrs[k]); }
    if (parent) { parent.appendChild(e); }
    return e;
  }
  function h(tag, cls, text, parent) {
    var e = document.createElement(tag);
    if (cls) { e.className = cls; }
    if (text !== undefined && text !== null) { e.textContent = text; }
    if (parent) { parent.appendChild(e); }
    return e;
  }
  function clear(node) { while (node.firstChild) { node.removeChild(node.firstChild); } }

  // ---------------------------------------------------------------- views
  function expand(timeline) {
    if (timeline === null) { return null; }
    var out = new Array(NF), cur = [], k = 0;
    for (var f = 0; f < NF; f++) {
      while (k < timeline.length && timeline[k][0] <= f) {
        cur = timeline[k][1] === "" ? [] : timeline[k][1].split(" ");
        k++;
      }
      out[f] = cur;
    }
    return out;
  }
  function byFrame(pairs) {
    var m = {};
    pairs.forEach(function (p) { (m[p[0]] = m[p[0]] || []).push(p[1]); });
    return m;
  }
  var VIEWS = D.views.map(function (v) {
    return { label: v.label, seat: v.seat, hands: v.hands.map(expand), ev: v.ev,
             ms: byFrame(v.ms), offered: byFrame(v.offered || []), faults: byFrame(v.faults) };
  });

  // ---------------------------------------------------------------- pips
  function pipSpots(v) {
    var a = 0.26, c = [0, 0];
    var tl = [-a, -a], tr = [a, -a], bl = [-a, a], br = [a, a], ml = [-a, 0], mr = [a, 0],
        tm = [0, -a], bm = [0, a];
    var T = [[], [c], [tl, br], [tl, c, br], [tl, tr, bl, br], [tl, tr, c, bl, br],
      [tl, ml, bl, tr, mr, br], [tl, ml, bl, c, tr, mr, br], [tl, ml, bl, tm, bm, tr, mr, br],
      [tl, ml, bl, tm, c, bm, tr, mr, br]];
    if (v < T.length) { return T[v]; }
    var cols = v > 12 ? 4 : 3, rows = Math.ceil(v / cols), out = [];
    for (var i = 0; i < v; i++) {
      var r = Math.floor(i / cols), inRow = Math.min(cols, v - r * cols), col = i % cols;
      var x = (col - (inRow - 1) / 2) * (0.64 / (cols - 1));
      var y = rows === 1 ? 0 : (r / (rows - 1) - 0.5) * 0.64;
      out.push([x, y]);
    }
    return out;
  }
  // one domino centred at 0,0 along x: `near` on the left half, `far` on the right
  function drawTile(parent, near, far, cls) {
    var g = el("g", { "class": cls || "tile" }, parent);
    el("rect", { "class": "body", x: -1, y: -0.5, width: 2, height: 1, rx: 0.13 }, g);
    el("line", { "class": "mid", x1: 0, y1: -0.4, x2: 0, y2: 0.4 }, g);
    [[near, -0.5], [far, 0.5]].forEach(function (half) {
      var v = half[0], r = v > 12 ? 0.055 : (v > 9 ? 0.065 : 0.085);
      pipSpots(v).forEach(function (p) {
        el("circle", { "class": "pip", cx: half[1] + p[0], cy: p[1], r: r,
                       fill: PIP_COLORS[v % PIP_COLORS.length] }, g);
      });
    });
    return g;
  }

  // ---------------------------------------------------------------- geometry
  var GEO = {};
  function slotOrder(cap) {
    var ts = [];
    for (var k = 0; k < cap; k++) { ts.push(cap === 1 ? 0 : (k - (cap - 1) / 2) / ((cap - 1) / 2)); }
    ts.sort(function (a, b) { return Math.abs(a) - Math.abs(b) || a - b; });
    return ts;
  }
  // Tiles are placed in play order (node ids), each at its parent's free slot; a tile
  // that would overlap earlier ones bends its line a little, as players do at a table.
  function geometry(r) {
    if (GEO[r]) { return GEO[r]; }
    var nodes = D.rounds[r].nodes, kids = nodes.map(function () { return []; });
    nodes.forEach(function (n, i) { if (n[2] >= 0) { kids[n[2]].push(i); } });
    var spokes = nodes[0][4], G = new Array(nodes.length), slots = new Array(nodes.length);
    var spread = Math.min(32, 0.45 * 360 / Math.max(spokes, 1)) * Math.PI / 180;
    var halves = [[-0.5, 0], [0.5, 0]];
    G[0] = { x: 0, y: 0, rot: 0, near: nodes[0][0], far: nodes[0][0], dbl: true };
    slots[0] = [];
    for (var k = 0; k < spokes; k++) {
      var th = -Math.PI / 2 + Math.PI / spokes + k * 2 * Math.PI / spokes;
      var dx = Math.cos(th), dy = Math.sin(th);
      var rr = Math.min(Math.abs(dx) > 1e-9 ? 1.0 / Math.abs(dx) : 1e9,
                        Math.abs(dy) > 1e-9 ? 0.5 / Math.abs(dy) : 1e9) + 0.1;
      if (spokes > 2) { rr = Math.max(rr, 0.56 / Math.sin(Math.PI / spokes)); }
      slots[0].push({ x: dx * rr, y: dy * rr, th: th });
    }
    function fits(cx, cy, ux, uy) {
      var ax = cx - ux * 0.5, ay = cy - uy * 0.5, bx = cx + ux * 0.5, by = cy + uy * 0.5;
      for (var q = 0; q < halves.length; q++) {
        var hx = halves[q][0], hy = halves[q][1];
        if ((hx - ax) * (hx - ax) + (hy - ay) * (hy - ay) < 1.0 ||
            (hx - bx) * (hx - bx) + (hy - by) * (hy - by) < 1.0) { return false; }
      }
      return true;
    }
    var BENDS = [0, 12, -12, 24, -24, 36, -36, 50, -50, 65, -65];
    for (var i = 1; i < nodes.length; i++) {
      var n = nodes[i], s = slots[n[2]] && slots[n[2]][kids[n[2]].indexOf(i)];
      if (!s) { continue; }
      var dbl = n[0] === n[1], best = null;
      for (var b = 0; b < BENDS.length && best === null; b++) {
        var t = s.th + BENDS[b] * Math.PI / 180, ux = Math.cos(t), uy = Math.sin(t);
        var cx = s.x + ux * (dbl ? 0.5 : 1), cy = s.y + uy * (dbl ? 0.5 : 1);
        if (dbl ? fits(cx, cy, -uy, ux) : fits(cx, cy, ux, uy)) { best = [t, cx, cy]; }
      }
      if (best === null) {
        best = [s.th, s.x + Math.cos(s.th) * (dbl ? 0.5 : 1), s.y + Math.sin(s.th) * (dbl ? 0.5 : 1)];
      }
      var th2 = best[0], ex = Math.cos(th2), ey = Math.sin(th2), deg = th2 * 180 / Math.PI;
      var x = best[1], y = best[2];
      if (dbl) {
        G[i] = { x: x, y: y, rot: deg + 90, near: n[0], far: n[0], dbl: true };
        halves.push([x - ey * 0.5, y + ex * 0.5], [x + ey * 0.5, y - ex * 0.5]);
        slots[i] = slotOrder(n[4]).map(function (t) {
          return { x: x + ex * 0.62 - ey * t * 0.95, y: y + ey * 0.62 + ex * t * 0.95,
                   th: th2 + t * spread };
        });
      } else {
        G[i] = { x: x, y: y, rot: deg, near: nodes[n[2]][3], far: n[3], dbl: false };
        halves.push([x - ex * 0.5, y - ey * 0.5], [x + ex * 0.5, y + ey * 0.5]);
        slots[i] = [{ x: x + ex * 1.1, y: y + ey * 1.1, th: th2 }];
      }
    }
    GEO[r] = { G: G, slots: slots, kids: kids };
    return GEO[r];
  }

  // ---------------------------------------------------------------- state
  var pos = 0, view = 0, timer = null;
  var roundStarts = D.rounds.map(function (r) { return r.start; });
  var $ = function (id) { return document.getElementById(id); };

  function who(seat, v) {
    if (seat === null || seat === undefined) { return "the referee"; }
    return "seat " + seat + (v.seat === seat ? " (you)" : "");
  }
  function eventText(id, v) {
    var e = D.events[id], k = e[0], seat = e[2], tile = e[3];
    switch (k) {
      case "s": return "round " + (e[1] + 1) + " starts with " + tile + "; " + who(seat, v) + " first";
      case "o": return who(seat, v) + " draws " + tile + " in the draw-off";
      case "c": return who(seat, v) + " puts " + tile + " in the centre";
      case "p": return who(seat, v) + " plays " + tile + " on #" + e[5] + " (new #" + e[4] + ")";
      case "d": return who(seat, v) + " draws " + (tile ? tile : "a tile");
      case "x": return who(seat, v) + " passes";
      default:
        return "round " + (e[1] + 1) + " ends (" + String(e[7]).replace("_", " ") +
          (seat !== null && seat !== undefined ? ", " + who(seat, v) + " went out" : "") +
          "): " + e[6].join(" · ");
    }
  }

  // ---------------------------------------------------------------- drawing
  // the frame's tiles (and the pending double's free slots), framed with a margin
  function viewBox(geo, n, pend) {
    var minx = -1.5, maxx = 1.5, miny = -1.5, maxy = 1.5;
    function grow(x, y) {
      minx = Math.min(minx, x - 1.4); maxx = Math.max(maxx, x + 1.4);
      miny = Math.min(miny, y - 1.4); maxy = Math.max(maxy, y + 1.4);
    }
    for (var i = 0; i < n; i++) { if (geo.G[i]) { grow(geo.G[i].x, geo.G[i].y); } }
    if (pend >= 0) {
      geo.slots[pend].forEach(function (q) { grow(q.x + Math.cos(q.th), q.y + Math.sin(q.th)); });
    }
    var w = maxx - minx, hgt = maxy - miny, minW = 18, minH = 12;
    if (w < minW) { minx -= (minW - w) / 2; w = minW; }
    if (hgt < minH) { miny -= (minH - hgt) / 2; hgt = minH; }
    return [minx, miny, w, hgt];
  }

  function drawLayout(fr) {
    var svg = $("layout"), r = fr[F_ROUND], geo = geometry(r), n = fr[F_NODES];
    var nodes = D.rounds[r].nodes;
    clear(svg);
    svg.setAttribute("viewBox", viewBox(geo, n, fr[F_PEND]).join(" "));
    svg.setAttribute("class", $("ids").checked ? "ids" : "");
    var lastNode = -1;
    if (fr[F_KIND] === 1 && /@/.test(fr[F_MOVE])) { lastNode = n - 1; }
    var children = new Array(n).fill(0);
    for (var i = 1; i < n; i++) { children[nodes[i][2]]++; }
    var pend = fr[F_PEND];
    if (pend >= 0) {
      geo.slots[pend].slice(children[pend]).forEach(function (s) {
        var g = el("g", { transform: "translate(" + (s.x + Math.cos(s.th)) + " " +
          (s.y + Math.sin(s.th)) + ") rotate(" + (s.th * 180 / Math.PI) + ")" }, svg);
        el("rect", { "class": "ghost", x: -0.95, y: -0.45, width: 1.9, height: 0.9, rx: 0.12 }, g);
      });
    }
    for (var j = 0; j < n; j++) {
      var g = geo.G[j];
      if (!g) { continue; }
      var cls = "tile" + (j === 0 ? " centre" : "") + (j === lastNode ? " last" : "") +
        (j === pend ? " pending" : "");
      var t = drawTile(svg, g.near, g.far, cls);
      t.setAttribute("transform", "translate(" + g.x + " " + g.y + ") rotate(" + g.rot + ")");
      t.setAttribute("data-node", j);
      var tt = el("title", {}, t);
      tt.textContent = "#" + j + " " + nodes[j][0] + "-" + nodes[j][1] +
        (j === pend ? " (pending double)" : "");
      var lbl = el("text", { "class": "nid", x: g.x, y: g.y - 0.78 }, svg);
      lbl.textContent = "#" + j;
    }
  }

  function handTile(t, drawn) {
    var ab = t.split("-"), s = document.createElementNS(NS, "svg");
    s.setAttribute("class", "htile" + (drawn ? " drawn" : ""));
    s.setAttribute("viewBox", "-1.06 -0.56 2.12 1.12");
    s.setAttribute("data-tile", t);
    var tt = el("title", {}, s);
    tt.textContent = t;
    drawTile(s, +ab[0], +ab[1], "tile");
    return s;
  }

  function drawHands(fr, v) {
    var box = $("hands");
    clear(box);
    var sizes = fr[F_SIZES];
    for (var s = 0; s < P; s++) {
      var row = h("div", "hand" + (fr[F_TURN] === s ? " turn" : ""), null, box);
      row.setAttribute("data-seat", s);
      var w = h("div", "who", null, row);
      var name = h("span", null, null, w);
      var sw = h("span", "swatch", null, name);
      sw.style.background = SEAT_COLORS[s % SEAT_COLORS.length];
      name.appendChild(document.createTextNode("seat " + s + (v.seat === s ? " (you)" : "")));
      h("span", "count", D.names[s] + " · " + sizes[s] + " tiles", w);
      var tiles = h("div", "tiles", null, row);
      var hand = v.hands[s] ? v.hands[s][pos] : null;
      if (hand) {
        tiles.classList.add("shown");
        hand.forEach(function (t) { tiles.appendChild(handTile(t, false)); });
        if (!hand.length) { h("span", "count", "(empty)", tiles); }
      } else {
        tiles.classList.add("hidden");
        for (var k = 0; k < sizes[s]; k++) { h("span", "back", null, tiles); }
      }
    }
  }

  function drawStep(fr, v) {
    var kind = fr[F_KIND], r = fr[F_ROUND], txt;
    if (kind === 0) { txt = "Round " + (r + 1) + " begins"; }
    else if (kind === 2) { txt = "Round " + (r + 1) + " ends"; }
    else {
      txt = "Step " + (fr[F_ACTION] + 1) + "/" + D.actions + " · " + who(fr[F_ACTOR], v) + ": " +
        fr[F_MOVE] + (fr[F_FALLBACK] ? " (fallback)" : "");
    }
    var step = $("step");
    clear(step);
    step.appendChild(document.createTextNode(txt));
    var ms = v.ms[pos];
    if (ms) { h("span", "ms", " · decided in " + ms[0].toFixed(2) + " ms", step); }
    var offered = v.offered[pos];
    if (offered) {
      var row = h("div", "offered", "offered: ", step);
      offered[0].forEach(function (key, i) {
        if (i) { row.appendChild(document.createTextNode(" · ")); }
        h("span", key === fr[F_MOVE] ? "chosen" : null, i + " " + key, row);
      });
    }
    var list = $("events");
    clear(list);
    for (var f = Math.max(0, pos - 6); f <= pos; f++) {
      v.ev[f].forEach(function (id) { h("li", f === pos ? "cur" : "old", eventText(id, v), list); });
    }
    list.scrollTop = list.scrollHeight;
    var faults = $("faults");
    clear(faults);
    (v.faults[pos] || []).forEach(function (t) { h("div", "fault", "⚠ fault: " + t, faults); });
    var st = $("status");
    clear(st);
    st.appendChild(document.createTextNode("Round " + (r + 1) + "/" + D.rounds.length +
      " · boneyard " + fr[F_BONE] + " (" + fr[F_DRAWABLE] + " drawable)" +
      (fr[F_TURN] >= 0 ? " · to move: seat " + fr[F_TURN] : "")));
    if (fr[F_PEND] >= 0) {
      var n = D.rounds[r].nodes[fr[F_PEND]];
      h("div", "pend", "pending double: #" + fr[F_PEND] + " " + n[0] + "-" + n[1], st);
    }
  }

  function finishedRounds() {
    var out = [];
    D.rounds.forEach(function (rd) { if (rd.end !== undefined && rd.end <= pos) { out.push(rd); } });
    return out;
  }

  function drawScores() {
    var done = finishedRounds(), table = $("scoreTable");
    clear(table);
    var head = h("tr", null, null, table);
    h("th", null, "round", head);
    for (var s = 0; s < P; s++) { h("th", null, "seat " + s, head); }
    var totals = new Array(P).fill(0), series = [new Array(P).fill(0)];
    done.forEach(function (rd, i) {
      var tr = h("tr", null, null, table);
      h("td", null, String(i + 1), tr);
      rd.scores.forEach(function (v, s) { totals[s] += v; h("td", null, String(v), tr); });
      series.push(totals.slice());
    });
    var tot = h("tr", "total", null, table);
    h("td", null, "total", tot);
    totals.forEach(function (v) { h("td", null, String(v), tot); });
    if (pos === NF - 1 && D.result && D.result.ranks && D.result.ranks.length) {
      var rk = h("tr", null, null, table);
      h("td", null, "rank", rk);
      D.result.ranks.forEach(function (v) { h("td", null, String(v), rk); });
    }
    drawChart(series);
  }

  function drawChart(series) {
    var svg = $("chart");
    clear(svg);
    var W = 600, H = 220, L = 44, R = 90, T = 12, B = 28;
    svg.setAttribute("viewBox", "0 0 " + W + " " + H);
    var rounds = Math.max(D.rounds.length, 1), maxv = 10;
    series.forEach(function (row) { row.forEach(function (v) { maxv = Math.max(maxv, v); }); });
    var step = Math.pow(10, Math.floor(Math.log10(maxv))) / 2;
    while (maxv / step > 6) { step *= 2; }
    maxv = Math.ceil(maxv / step) * step;
    function X(i) { return L + (W - L - R) * i / rounds; }
    function Y(v) { return T + (H - T - B) * (1 - v / maxv); }
    for (var y = 0; y <= maxv; y += step) {
      el("line", { x1: L, x2: W - R, y1: Y(y), y2: Y(y), stroke: "#ddd" }, svg);
      var t = el("text", { x: L - 6, y: Y(y) + 4, "text-anchor": "end", "font-size": 11,
                           fill: "#666" }, svg);
      t.textContent = String(y);
    }
    for (var i = 0; i <= rounds; i++) {
      var tx = el("text", { x: X(i), y: H - 10, "text-anchor": "middle", "font-size": 11,
                            fill: "#666" }, svg);
      tx.textContent = String(i);
    }
    var cur = D.frames[pos][F_ROUND];
    el("rect", { x: X(cur), y: T, width: X(cur + 1) - X(cur), height: H - T - B,
                 fill: "#e07a1f", opacity: 0.08 }, svg);
    for (var s = 0; s < P; s++) {
      var color = SEAT_COLORS[s % SEAT_COLORS.length];
      var pts = series.map(function (row, k) { return X(k) + "," + Y(row[s]); }).join(" ");
      el("polyline", { points: pts, fill: "none", stroke: color, "stroke-width": 2.2,
                       "class": "series", "data-seat": s }, svg);
      series.forEach(function (row, k) {
        el("circle", { cx: X(k), cy: Y(row[s]), r: 2.8, fill: color }, svg);
      });
      var lg = el("text", { x: W - R + 8, y: T + 14 + s * 16, "font-size": 12, fill: color }, svg);
      lg.textContent = "seat " + s + ": " + series[series.length - 1][s];
    }
  }

  function render() {
    var fr = D.frames[pos], v = VIEWS[view];
    drawLayout(fr);
    drawHands(fr, v);
    drawStep(fr, v);
    drawScores();
    $("slider").value = pos;
    $("round").value = String(fr[F_ROUND]);
    document.body.setAttribute("data-frame", pos);
    document.body.setAttribute("data-view", view);
  }

  function go(i) { pos = Math.max(0, Math.min(NF - 1, i)); render(); }
  function nextRound() {
    for (var i = 0; i < roundStarts.length; i++) { if (roundStarts[i] > pos) { return go(roundStarts[i]); } }
    go(NF - 1);
  }
  function prevRound() {
    var cur = 0;
    roundStarts.forEach(function (s) { if (s <= pos) { cur = s; } });
    if (pos > cur) { return go(cur); }
    var prev = 0;
    roundStarts.forEach(function (s) { if (s < cur) { prev = s; } });
    go(prev);
  }
  function toggle() {
    if (timer) { clearInterval(timer); timer = null; $("play").textContent = "▶ play"; return; }
    $("play").textContent = "❚❚ pause";
    timer = setInterval(function () {
      if (pos >= NF - 1) { toggle(); return; }
      go(pos + 1);
    }, 450);
  }
  function setView(i) { view = Math.max(0, Math.min(VIEWS.length - 1, i)); $("view").value = String(view); render(); }

  // ---------------------------------------------------------------- setup
  var rl = D.resolved || {};
  $("title").textContent = "cfarena replay · " + D.match_id;
  $("meta").textContent = [
    (D.rules.preset || "?") + " rules", P + " players",
    "double-" + rl.set_size + " set", rl.spokes + " spokes", D.seed === null ? "seed hidden (one seat's view)" : "seed " + D.seed,
    D.status + (D.reason ? " (" + String(D.reason).replace(/_/g, " ") + ")" : ""),
    D.names.map(function (n, i) { return i + ": " + n; }).join(", ")
  ].join(" · ");
  $("slider").max = NF - 1;
  D.rounds.forEach(function (rd, i) {
    var o = h("option", null, "Round " + (i + 1) + " (" + rd.nodes[0][0] + "-" + rd.nodes[0][1] + ")",
              $("round"));
    o.value = String(i);
  });
  VIEWS.forEach(function (v, i) { var o = h("option", null, v.label, $("view")); o.value = String(i); });
  $("first").onclick = function () { go(0); };
  $("last").onclick = function () { go(NF - 1); };
  $("prev").onclick = function () { go(pos - 1); };
  $("next").onclick = function () { go(pos + 1); };
  $("prevRound").onclick = prevRound;
  $("nextRound").onclick = nextRound;
  $("play").onclick = toggle;
  $("slider").oninput = function () { go(+this.value); };
  $("round").onchange = function () { go(roundStarts[+this.value]); };
  $("view").onchange = function () { setView(+this.value); };
  $("ids").onchange = render;
  document.addEventListener("keydown", function (e) {
    if (e.target && e.target.tagName === "SELECT") { return; }
    var k = e.key;
    if (k === "n" || k === " " || k === "ArrowRight") { go(pos + 1); }
    else if (k === "p" || k === "ArrowLeft") { go(pos - 1); }
    else if (k === "r") { nextRound(); }
    else if (k === "R") { prevRound(); }
    else if (k === "Home") { go(0); }
    else if (k === "End") { go(NF - 1); }
    else if (k === "a") { toggle(); }
    else { return; }
    e.preventDefault();
  });
  window.cfReplay = { go: go, setView: setView, frames: NF, views: VIEWS.length,
                      position: function () { return pos; } };
  render();
})();
