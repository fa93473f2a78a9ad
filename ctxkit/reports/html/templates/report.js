/* ctxkit report: tooltips on focus and hover, the fate filter, call selection.
   Everything it shows is already in the page; without this script nothing is lost. */
(function () {
  "use strict";
  var doc = document;
  doc.documentElement.classList.add("js");

  var tip = doc.createElement("div");
  tip.id = "tip";
  tip.setAttribute("role", "tooltip");
  tip.hidden = true;
  doc.body.appendChild(tip);

  function label(el) {
    var t = el.querySelector("title");
    if (t) {
      el.setAttribute("aria-label", t.textContent);
      el.setAttribute("aria-describedby", "tip");
      t.remove();
    }
    return el.getAttribute("aria-label") || "";
  }
  function show(el) {
    tip.textContent = label(el);
    tip.hidden = false;
    var r = el.getBoundingClientRect();
    var top = r.bottom + 6;
    if (top + tip.offsetHeight > window.innerHeight) { top = Math.max(r.top - tip.offsetHeight - 6, 0); }
    var left = Math.min(Math.max(r.left, 4), Math.max(window.innerWidth - tip.offsetWidth - 4, 4));
    tip.style.top = top + "px";
    tip.style.left = left + "px";
  }
  function hide() { tip.hidden = true; }
  function target(e) { return e.target && e.target.closest ? e.target.closest(".blk, .call") : null; }
  doc.addEventListener("focusin", function (e) { var b = target(e); if (b) { show(b); } else { hide(); } });
  doc.addEventListener("focusout", hide);
  doc.addEventListener("mouseover", function (e) { var b = target(e); if (b) { show(b); } });
  doc.addEventListener("mouseout", function (e) { if (target(e)) { hide(); } });
  doc.addEventListener("keydown", function (e) { if (e.key === "Escape") { hide(); } });

  var filter = doc.getElementById("fate-filter");
  var table = doc.getElementById("explain");
  if (filter && table) {
    filter.addEventListener("change", function () {
      table.setAttribute("data-fate", filter.value);
      var shown = filter.value === "all" ? table.tBodies[0].rows.length : table.querySelectorAll("tbody tr.f-" + filter.value).length;
      doc.getElementById("fate-count").textContent = shown + " row(s)";
    });
  }

  window.addEventListener("beforeprint", function () {
    doc.querySelectorAll("details").forEach(function (d) { d.open = true; });
  });

  /* Replay: choosing a call draws its seat map from the data block, with the flow of the
     window above (ctxkit/reports/html/seatmap.py): rows of equal height, blocks left to right. */
  var data = doc.getElementById("calls-data");
  var holder = doc.getElementById("call-map");
  if (!data || !holder) { return; }
  var replay = JSON.parse(data.textContent);
  var geo = replay.geometry;
  var NS = "http://www.w3.org/2000/svg";
  var scale = geo.width * geo.rows / replay.window;

  function flow(start, length, cls, parent) {
    var pos = start, end = start + length;
    while (end - pos > 1e-6) {
      var row = Math.floor(pos / geo.width), x = pos - row * geo.width;
      if (geo.width - x < 1e-6) { pos = (row + 1) * geo.width; continue; }
      var w = Math.min(geo.width - x, end - pos);
      var r = doc.createElementNS(NS, "rect");
      r.setAttribute("class", cls);
      r.setAttribute("x", x.toFixed(2));
      r.setAttribute("y", row * (geo.row + geo.gap));
      r.setAttribute("width", w.toFixed(2));
      r.setAttribute("height", geo.row);
      parent.appendChild(r);
      pos += w;
    }
    return end;
  }
  function el(name, cls) {
    var e = doc.createElementNS(NS, name);
    if (cls) { e.setAttribute("class", cls); }
    return e;
  }
  var position = {};  /* a call's index -> its place among the drawn calls */
  replay.calls.forEach(function (c, p) { position[c.i] = p; });
  function blocksOf(p) {
    /* each drawn call: runs [-1 - start, length] of the previous drawn call's blocks, and new blocks */
    var blocks = [];
    for (var j = 0; j <= p; j++) {
      var next = [];
      replay.calls[j].d.forEach(function (op) {
        if (op[0] < 0) { next = next.concat(blocks.slice(-1 - op[0], -1 - op[0] + op[1])); } else { next.push(op); }
      });
      blocks = next;
    }
    return blocks;
  }
  function choose(i) {
    var p = position[i], c = replay.calls[p];
    if (!c) { return; }
    doc.querySelectorAll(".call.sel, tr.sel").forEach(function (n) { n.classList.remove("sel"); });
    var bar = doc.getElementById("call-" + i), row = doc.getElementById("row-" + i);
    if (bar) { bar.classList.add("sel"); }
    if (row) { row.classList.add("sel"); }
    var height = geo.rows * geo.row + (geo.rows - 1) * geo.gap;
    var svg = el("svg", "seatmap");
    svg.setAttribute("viewBox", "-2 -2 1004 " + (height + 4));
    svg.setAttribute("role", "group");
    svg.setAttribute("aria-label", "seat map of call " + i);
    var win = el("g", "window");
    svg.appendChild(win);
    var pos = 0, used = 0;
    blocksOf(p).forEach(function (b, n) {
      var g = el("g", "blk");
      g.setAttribute("tabindex", "0");
      g.setAttribute("role", "img");
      g.setAttribute("id", "c" + i + "-b" + n);
      g.setAttribute("aria-label", replay.labels[b[0]]);
      for (var k = 1; k < b.length; k += 2) {
        pos = flow(pos, b[k + 1] * scale, "s-" + replay.segments[b[k]], g);
        used += b[k + 1];
      }
      win.appendChild(g);
    });
    var free = el("g", "zone free"), margin = el("g", "zone margin");
    pos = flow(pos, Math.max(c.a - used, 0) * scale, "", free);
    flow(pos, Math.max(geo.width * geo.rows - pos, 0), "", margin);
    win.appendChild(free);
    win.appendChild(margin);
    holder.replaceChildren(svg);
    var note = doc.createElement("p");
    note.className = "muted";
    note.textContent = c.n;
    holder.appendChild(note);
    doc.getElementById("call-chosen").textContent = "The chosen call: " + c.t;
  }
  doc.querySelectorAll(".call").forEach(function (g) {
    var i = Number(g.getAttribute("data-call"));
    g.addEventListener("click", function () { choose(i); });
    g.addEventListener("keydown", function (e) {
      if (e.key === "Enter" || e.key === " ") { e.preventDefault(); choose(i); }
    });
  });
  doc.querySelectorAll("tr[data-call]").forEach(function (tr) {
    tr.addEventListener("click", function () { choose(Number(tr.getAttribute("data-call"))); });
  });
  if (replay.calls.length) { choose(replay.calls[replay.calls.length - 1].i); }
})();
