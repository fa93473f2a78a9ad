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
})();
